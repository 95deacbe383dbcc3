"""The calibrated sim panel: names, the pinned file, determinism, and the closed-form model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from apiflow.bank import load_bank
from apiflow.errors import UsageError
from apiflow.hashing import content_hash
from apiflow.models.calibrated import CALIBRATED_PANEL, PANEL_FILE, load_profiles, plan
from apiflow.models.latent import SOLO, LatentParams, predict
from apiflow.models.registry import OFFLINE_MODELS, is_sim_profile, sim_model
from apiflow.models.sim import PROFILES, sim_rng


@pytest.fixture(scope="module")
def sample():
    return load_bank("bank/sample")


def test_panel_names_resolve_but_stay_out_of_the_demo_models():
    assert len(CALIBRATED_PANEL) == 19
    for name in CALIBRATED_PANEL:
        profile = name.removeprefix("apiflow/sim:")
        assert is_sim_profile(profile) and profile not in PROFILES and name not in OFFLINE_MODELS
    assert not is_sim_profile("calibrated-no-such-model")


def test_pinned_file_hash_and_models():
    document = json.loads(PANEL_FILE.read_text())
    assert document["sha256"] == content_hash({k: v for k, v in document.items() if k != "sha256"})
    assert {f"apiflow/sim:calibrated-{slug}" for slug in load_profiles()} == set(CALIBRATED_PANEL)


def test_tampered_file_is_a_usage_error(tmp_path):
    document = json.loads(PANEL_FILE.read_text())
    document["models"]["gpt-5.5"]["slip"] = 0.5
    path = tmp_path / "panel.json"
    path.write_text(json.dumps(document))
    with pytest.raises(UsageError, match="sha256"):
        load_profiles(path)


def test_trials_replay_and_epochs_share_stuck_tasks(sample):
    profile = load_profiles()["gpt-5.4-mini"]
    for task in sample.tasks.values():
        first = plan(profile, task, sim_rng(7, task.id, "calibrated-gpt-5.4-mini"))
        again = plan(profile, task, sim_rng(7, task.id, "calibrated-gpt-5.4-mini"))
        assert first == again
        model = sim_model(task, 7, "calibrated-gpt-5.4-mini")
        assert model.model_api == "apiflow/sim:calibrated-gpt-5.4-mini"


def test_closed_form_decays_slower_than_independent_steps():
    p = LatentParams(0.02, 0.02, 0.05, 0.3, 0.005, 0.05, 1.0, 0.1)
    lengths = np.array([SOLO, *range(2, 21)])
    chain = lengths != SOLO
    pred = predict(p, lengths, chain)
    assert pred.solo > pred.by_length[2] > pred.by_length[20] > 0.5
    assert pred.best_of >= pred.rate >= pred.all_of
