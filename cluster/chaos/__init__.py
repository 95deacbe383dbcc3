"""The chaos suite's machinery: a two-node local Ray, a freezable S3 server and the provider stand-in
as subprocesses, the scenarios that kill and freeze them, and the figures and checks they report.

``bench/chaos.py`` is its command and ``tests/cluster/test_chaos.py`` its small run; both import it
from here, as do the benchmarks that need a free port or a server's readiness.
"""
