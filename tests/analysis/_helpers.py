"""Helpers for the analysis tests: tiny hand-made trial tables."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from apiflow.analysis.trials import Trials, trials_from_table

DATA = Path(__file__).resolve().parents[1] / "data"
PUBLISHED = DATA.parents[1] / "configs" / "panels" / "published-trials.parquet"
TRANSCRIPTS = DATA / "transcripts"


def trial(
    model: str, task: str, verdict: str, *, g1=None, g2=None, abstained=None, harness=None, **extra
) -> dict:
    """One row; ``verdict`` "C" passes, "I" fails, "" is unscored."""
    if verdict == "C":
        g1, g2 = True if g1 is None else g1, True if g2 is None else g2
    return {"model": model, "task_id": task, "verdict": verdict, "g1_passed": g1, "g2_passed": g2,
            "abstained": abstained, "harness": harness, **extra}  # fmt: skip


def make_trials(rows: list[dict], *, count_unscored: bool = False) -> Trials:
    """Trials from row dicts (missing keys are null)."""
    keys = sorted({k for r in rows for k in r})
    table = pa.Table.from_pylist([{k: r.get(k) for k in keys} for r in rows])
    return trials_from_table(table, count_unscored=count_unscored)


def our_record(
    model: str, task: str, epoch: int, verdict: str, termination: str = "answered", cost: float = 0.01
):
    """A schema-1.0 record of ours (with the trailing ``apiflow`` block) as a dict."""
    from apiflow.results.record import ApiflowBlock, Provenance, TrialRecord

    passed = {"C": True, "I": False}.get(verdict)
    verifier = None
    if verdict:
        verifier = {
            "scorer": "apiflow",
            "value": verdict,
            "explanation": "ok" if passed else "1/2 predicates matched; failed: G2 answer",
            "metadata": {
                "sub_predicates": {"g1_passed": True, "g2_passed": bool(passed), "predicates_passed": 1 + bool(passed),
                                   "predicates_total": 2},
                "partial_score": 1.0 if passed else 0.5,
            },
        }  # fmt: skip
    record = TrialRecord(
        model=model,
        model_api=f"apiflow/{model}",
        task_id=task,
        trial=epoch,
        verdict=verdict,
        passed=passed,
        verifier=verifier,
        messages=[{"role": "user", "content": "go"}, {"role": "assistant", "content": "done"}],
        provenance=Provenance(run_id="run-1", epoch=epoch, created="2026-12-01T00:00:00+00:00"),
        apiflow=ApiflowBlock(
            trial_id=f"{model}|{task}|{epoch}",
            bank="sample",
            bank_hash="0" * 64,
            seed=epoch,
            termination=termination,
            cost_usd=cost,
        ),  # fmt: skip
    )
    return record.model_dump(mode="json")
