"""The budget ledger is rebuilt from the store on resume (no Ray): rows, failure rows, the last checkpoint.

A driver killed and rerun must not be able to spend the cap again: the rerun's ledger starts from
the spend on record and refuses what no longer fits.
"""

from __future__ import annotations

import pytest

from apiflow.agent import TrialSpec, trial_seed
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.models import make_model
from apiflow.results.record import Termination
from apiflow.results.rows import record_to_row
from apiflow.results.store import ResultStore
from apiflow.runner import play_trial_sync
from cluster.budget import Ledger, SpendOnRecord, checkpoint, spend_on_record


@pytest.fixture(scope="module")
def records():
    bank = load_bank(DEFAULT_BANK)
    out = []
    for index, task in enumerate(list(bank.tasks.values())[:4]):
        model = make_model("apiflow/oracle", task, trial_seed(0, task.id, 1))
        record = play_trial_sync(
            TrialSpec(
                task=task, world=bank.world_of(task), seed=0, epoch=1, run_id="grid-run",
                bank_name=bank.name, bank_hash=bank.hash, model_slug="apiflow/oracle",
            ),
            model,
        )
        record.apiflow.trial_id = f"trial-{index}"
        record.apiflow.cost_usd = 0.25 * (index + 1)  # 0.25, 0.50, 0.75, 1.00
        out.append(record)
    return out


def _put(store: ResultStore, record) -> bool:
    return store.put_trial(record, record_to_row(record, panel="t", price_table="test"))


def _as_failure(record, cost: float):
    failed = record.model_copy(deep=True)
    failed.apiflow.termination = Termination.PROVIDER_ERROR
    failed.apiflow.harness_error = "RateLimitError: retries exhausted"
    failed.apiflow.cost_usd = cost
    return failed


@pytest.mark.parametrize("row_format", ["parquet", "arrow"])
def test_spend_on_record_sums_rows_every_failed_attempt_and_the_last_checkpoint(
    tmp_path, records, row_format
):
    store = ResultStore(str(tmp_path / "out"), row_format=row_format)
    assert spend_on_record(store) == SpendOnRecord(0.0, 0.0, 0.0, 0)
    for record in records[:3]:
        assert _put(store, record)
    # Two failed attempts of one trial (same grid run id): both are kept, both were paid for.
    first, second = _as_failure(records[3], 0.125), _as_failure(records[3], 0.0625)
    second.apiflow.harness_error = "InternalServerError: retries exhausted"  # another attempt, other bytes
    assert _put(store, first) and _put(store, second)
    assert store.failed_ids() == {"trial-3"}
    store.write_checkpoint("a1", {"attempt": "a1", "written_at": 10.0, "unstored_usd": 9.0})
    store.write_checkpoint("a2", {"attempt": "a2", "written_at": 20.0, "unstored_usd": 0.375})
    spend = spend_on_record(store)
    assert spend.rows_usd == pytest.approx(1.5) and spend.failures_usd == pytest.approx(0.1875)
    assert spend.unstored_usd == pytest.approx(0.375)  # the latest checkpoint, not the sum
    assert spend.total_usd == pytest.approx(2.0625) and spend.objects == 5


def test_a_rerun_cannot_spend_the_cap_again(tmp_path, records):
    store = ResultStore(str(tmp_path / "out"))
    cap = 2.0
    first = Ledger(cap)  # the first driver spends 1.50 on three stored trials, then 0.40 in flight ...
    assert first.admit([(f"t{i}", 0, 0.1) for i in range(4)]) == 4
    for index, record in enumerate(records[:3]):
        first.charge(f"t{index}", record.apiflow.cost_usd)
        first.finish(f"t{index}", stored=True)
        _put(store, record)
    first.charge("t3", 0.4)
    store.write_checkpoint("a1", checkpoint("a1", first.summary(), SpendOnRecord(0, 0, 0, 0), stored_usd=1.5))
    # ... and is SIGKILLed: the 0.40 has no row. The rerun's ledger starts from the record.
    base = spend_on_record(store)
    assert base.total_usd == pytest.approx(1.9)
    again = Ledger(cap, base.total_usd)
    assert again.admit([("a", 0, 0.05)]) == 1
    assert again.admit([("b", 0, 0.2)]) == 0  # 1.95 + 0.2 > 2.0: refused (waits for "a")
    again.finish("a", stored=True)
    assert again.admit([("b", 0, 0.2)]) == 0 and again.state.closed  # nothing in flight: closed
    # Without the rebuild a fresh ledger would have let the rerun spend the whole cap a second time.
    assert Ledger(cap).admit([("b", 0, 0.2)]) == 1


def test_checkpoint_carries_earlier_unstored_spend_forward():
    base = SpendOnRecord(rows_usd=1.0, failures_usd=0.5, unstored_usd=0.25, objects=3)
    ledger = Ledger(10.0, base.total_usd)
    assert ledger.admit([("open", 0, 0.5), ("done", 0, 0.3)]) == 2
    ledger.charge("done", 0.3)
    ledger.finish("done", stored=True)  # a trial that then stored its row (0.3)
    point = checkpoint("a2", ledger.summary(), base, stored_usd=0.3)
    assert point["spent_usd"] == pytest.approx(1.75 + 0.3) and point["reserved_usd"] > 0
    assert point["unstored_usd"] == pytest.approx(0.25)  # the earlier kill's, carried; holds are not spend
    ledger.charge("open", 0.1)  # the open trial's call is billed: a kill now would hide it
    assert checkpoint("a2", ledger.summary(), base, stored_usd=0.3)["unstored_usd"] == pytest.approx(0.35)
