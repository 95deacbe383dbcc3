"""Interop with other evaluation tools: Inspect AI ``.eval`` logs, written and read back.

Nothing here imports inspect_ai: ``evalzip`` writes Inspect's log format itself and the tests read
it with Inspect's own reader (docs/design/082-inspect-interop.md). This face is the format layer,
which ``analysis.ingest`` reads logs through; ``apiflow.interop.export`` (RESULTS -> logs, used by
``apiflow transcripts export``) sits above ``analysis`` and is imported from its module.
"""

from apiflow.interop.evalzip import EvalLogWriter, export_marker, read_samples, sample_members
from apiflow.interop.samples import record_to_sample, sample_to_record

__all__ = [
    "EvalLogWriter",
    "export_marker",
    "read_samples",
    "record_to_sample",
    "sample_members",
    "sample_to_record",
]
