"""Trial records, flat rows, prices and the result store."""

from apiflow.results.prices import Prices, PriceTable, cost_usd, load_price_table
from apiflow.results.record import (
    HARNESS_OUTCOMES,
    SCHEMA_VERSION,
    ApiflowBlock,
    LimitHit,
    Provenance,
    Termination,
    Tokens,
    TokensDetail,
    TrialId,
    TrialRecord,
)
from apiflow.results.rows import ROW_SCHEMA, TrialRow, published_row, record_to_row
from apiflow.results.store import ResultStore

__all__ = [
    "HARNESS_OUTCOMES",
    "ROW_SCHEMA",
    "SCHEMA_VERSION",
    "ApiflowBlock",
    "LimitHit",
    "PriceTable",
    "Prices",
    "Provenance",
    "ResultStore",
    "Termination",
    "Tokens",
    "TokensDetail",
    "TrialId",
    "TrialRecord",
    "TrialRow",
    "cost_usd",
    "load_price_table",
    "published_row",
    "record_to_row",
]
