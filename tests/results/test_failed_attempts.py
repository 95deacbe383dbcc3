"""``ResultStore.failed_attempts``: one row per unscored attempt, only the columns asked, checked reads,
and the trials in ``skip`` not even read (issue 26: what bounds a trial's retries on resume)."""

from __future__ import annotations

from storekit import damage

from apiflow.results.record import Termination
from apiflow.results.rows import record_to_row


def _fail(store, make_record, trial_id: str, attempt: int):
    record = make_record(trial_id=trial_id, passed=None, termination=Termination.PROVIDER_ERROR, cost_usd=0.01)
    record.apiflow.harness_error = f"LiteLLMProviderError: InternalServerError: attempt {attempt}"
    assert store.put_trial(record, record_to_row(record))


def test_every_attempt_is_a_row_and_skipped_trials_are_not_read(store, make_record):
    for attempt in range(3):
        _fail(store, make_record, "c" * 32, attempt)
    _fail(store, make_record, "d" * 32, 0)
    table = store.failed_attempts()
    assert table.column_names == ["trial_id", "harness_error"] and table.num_rows == 4
    assert sorted(table.column("trial_id").to_pylist()) == ["c" * 32] * 3 + ["d" * 32]
    assert store.failed_attempts(["trial_id"], skip={"c" * 32}).to_pylist() == [{"trial_id": "d" * 32}]
    path = next(p for p in store.objects.list("failures", (".parquet", ".arrow")) if "d" * 32 in p)
    damage(store, path, "garbage")
    assert store.failed_attempts(skip={"c" * 32}).num_rows == 0  # a damaged attempt is set aside, not counted
    assert store.failed_attempts().num_rows == 3
