"""Trial records, flat rows and the result store."""

from apiflow.results.record import (
    HARNESS_OUTCOMES,
    SCHEMA_VERSION,
    ApiflowBlock,
    Provenance,
    Termination,
    Tokens,
    TokensDetail,
    TrialId,
    TrialRecord,
)

__all__ = [
    "HARNESS_OUTCOMES",
    "SCHEMA_VERSION",
    "ApiflowBlock",
    "Provenance",
    "Termination",
    "Tokens",
    "TokensDetail",
    "TrialId",
    "TrialRecord",
]
