"""Our own trial records, regraded from their messages alone, agree with the live grade.

Runs every sample task with the offline models through the agent's ``run_trial_sync``
(graded live from the workspace), writes the schema-1.0 records, and regrades them with
``regrade``. Trials whose deciding response was only seen as a cut preview are allowed to
be indeterminate — never to disagree.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from apiflow.agent import TrialSpec
from apiflow.bank import DEFAULT_BANK, load_bank  # noqa: E402
from apiflow.grading.regrade import regrade  # noqa: E402
from apiflow.models import make_model  # noqa: E402
from apiflow.runner import play_trial_sync

MODELS = ("apiflow/oracle", "apiflow/blank", "apiflow/sim:erratic")


def test_live_records_regrade_to_agreement(tmp_path: Path) -> None:
    bank = load_bank(DEFAULT_BANK)
    verdicts = set()
    for name in MODELS:
        for task in bank.tasks.values():
            record = play_trial_sync(
                TrialSpec(
                    task=task,
                    world=bank.worlds[task.world],
                    seed=3,
                    epoch=1,
                    bank_name=bank.name,
                    bank_hash=bank.hash,
                    run_id="selfcheck",
                    model_slug=name.replace("/", "-").replace(":", "-"),
                ),
                make_model(name, task, 3),
            )
            assert record.verifier is not None, record.apiflow.harness_error
            verdicts.add(record.verdict)
            path = tmp_path / record.model / f"{task.id}-t1.json"
            path.parent.mkdir(exist_ok=True)
            path.write_text(record.to_json())
    assert verdicts == {"C", "I"}
    summary = regrade([tmp_path], workers=1)
    assert summary.files == len(MODELS) * len(bank.tasks) and summary.errors == 0
    assert summary.disagreements == []
    assert summary.determinable + summary.indeterminate == summary.files
    assert summary.verdict_agree == summary.g1_agree == summary.g2_agree == summary.determinable
