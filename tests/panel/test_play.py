"""The calibrated sim's chain slips fail under the grader, and the in-process panel player's rows do not
depend on how many worker processes play them."""

from __future__ import annotations

import asyncio
import random

from apiflow.agent import TrialSpec
from apiflow.bank import load_bank
from apiflow.models.calibrated import _Script, _segments
from apiflow.models.offline import ScriptedModel
from apiflow.panel.play import COLUMNS, play_panel
from apiflow.runner import play_trial


def _verdict(bank, task, skip: set[int]) -> str:
    script = _Script(task, random.Random(0))
    script.skip |= skip
    record = asyncio.run(
        play_trial(
            TrialSpec(
                task=task,
                world=bank.world_of(task),
                seed=0,
                epoch=1,
                bank_name=bank.name,
                bank_hash=bank.hash,
                run_id="slip",
                model_slug="slip",
            ),
            ScriptedModel("slip", script.turns()),
        )
    )
    return record.verdict


def test_a_chain_slip_in_any_segment_fails_the_chain():
    # The sim's promise: every deviation is fatal. A v1 chain is graded on its last segment only, so
    # one skipped essential step does not always fail it (the witness below); the whole segment's
    # essential work left out does, in both segments of every length-2 chain (docs/design/070 §1).
    v1 = load_bank("bank/v1")
    witness = v1.task("v1-w10-chain-1to02")
    assert _verdict(v1, witness, {4}) == "C"  # one step of segment 2 left out: still passes
    played = []
    for task in (t for t in v1.tasks.values() if t.kind == "chain" and t.length == 2):
        for segment in sorted(_segments(task)):
            script = _Script(task, random.Random(0))
            assert not script.slip(segment, abstain=0.0)
            played.append((task.id, segment, _verdict(v1, task, script.skip)))
    assert len(played) == 2 * 13
    assert [p for p in played if p[2] != "I"] == []


def test_panel_rows_are_labelled_by_slug_and_do_not_depend_on_jobs():
    models = ["apiflow/sim:calibrated-gpt-5.4-mini", "apiflow/sim:calibrated-gpt-5.5"]
    one = play_panel("bank/sample", models, epochs=1, jobs=1)
    two = play_panel("bank/sample", models, epochs=1, jobs=2)
    assert one.equals(two) and tuple(one.column_names) == COLUMNS
    assert sorted(set(one["model"].to_pylist())) == ["gpt-5.4-mini", "gpt-5.5"]
    assert one.num_rows == 2 * 13 and set(one["verdict"].to_pylist()) <= {"C", "I"}
