"""``python -m apiflow.cli``: the ``apiflow`` command without its console script."""

import sys

from apiflow.cli import entry

sys.exit(entry())
