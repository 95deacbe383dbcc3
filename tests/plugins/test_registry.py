"""Entry-point plug-ins in the registry: routing, laziness, faults, prices, the notebook API.

Each test installs a throwaway distribution on ``sys.path`` (``pluginkit``); nothing touches the venv.
"""

from __future__ import annotations

import sys

import pytest
from pluginkit import on_path, write_dist

import apiflow
from apiflow.cli import main
from apiflow.errors import UsageError
from apiflow.models import (
    check_model_name,
    installed_plugins,
    is_plugin,
    make_model,
    model_prices,
    model_slug,
    uses_litellm,
)
from apiflow.models.plugins import FREE, BrokenModel, PluginModel, litellm_routes
from apiflow.results.prices import load_price_table
from apiflow.results.rows import ROW_SCHEMA

# A plug-in that answers the sample task sub01 straight away (it fails: nothing was done), plus
# every way a plug-in can break.
SOURCE = """
    from apiflow.models import ModelOutput, Usage

    class Agent:
        def __init__(self, name, seed):
            self.model_api = name
            self.seed = seed

        async def generate(self, messages, tools, config):
            if self.model_api.endswith("/crash"):
                raise RuntimeError("agent fell over")
            return ModelOutput(text='{"ready_block_id": "?"}', usage=Usage(input=1000, output=10))

    class Plugin:
        prices = {"input": 2.0, "output": 8.0}

        @staticmethod
        def check(name):
            if name.endswith("/refused"):
                raise ValueError("no such agent")

        @staticmethod
        def make_model(name, task, seed, params):
            if name.endswith("/factory-bug"):
                raise KeyError("factory bug")
            return Agent(name, seed)

    plugin = Plugin()

    def bare_factory(name, task, seed, params):
        return Agent(name, seed)

    def not_a_model(name, task, seed, params):
        return object()
"""
POINTS = {
    "fake": "fakeplug:plugin",
    "bare": "fakeplug:bare_factory",
    "hollow": "fakeplug:not_a_model",
    "broken": "missing_module_xyz:plugin",
    "openai": "fakeplug:plugin",  # a litellm route: ignored, openai/... stays litellm's
    "apiflow": "fakeplug:plugin",  # reserved: never consulted
}
TASK = "sample-w01-sub01"


@pytest.fixture
def fake(tmp_path):
    write_dist(tmp_path, "fakeplug", "fakeplug", SOURCE, POINTS)
    with on_path(tmp_path):
        yield tmp_path


def test_routing_order_and_names(fake):
    assert "fakeplug" not in sys.modules  # listing the table imports nothing
    assert installed_plugins() == {
        "bare": "fakeplug 0.1",
        "broken": "fakeplug 0.1",
        "fake": "fakeplug 0.1",
        "hollow": "fakeplug 0.1",
    }  # fmt: skip (no reserved name, no litellm route)
    assert is_plugin("fake/any") and not is_plugin("apiflow/oracle") and not is_plugin("openai/gpt-5")
    assert not uses_litellm("fake/any") and uses_litellm("openai/gpt-5-mini")
    assert model_slug("fake/solver-2") == "fake-solver-2"  # a plug-in keeps its prefix
    assert model_slug("openai/gpt-5-mini") == "gpt-5-mini"  # litellm ids unchanged
    check_model_name("fake/solver")
    assert "fakeplug" in sys.modules  # imported on first use of its prefix
    model = make_model("fake/solver", _task(), 7, None)
    assert isinstance(model, PluginModel) and model.model_api == "fake/solver" and model.inner.seed == 7
    assert make_model("apiflow/oracle", _task(), 0).model_api == "apiflow/oracle"  # reserved prefix untouched
    assert isinstance(make_model("bare/x", _task(), 0), PluginModel)  # a bare factory works too


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("broken/x", "plug-in 'broken' (fakeplug 0.1) failed to load missing_module_xyz:plugin"),
        ("fake/refused", "plug-in 'fake' (fakeplug 0.1) refused 'fake/refused': no such agent"),
        ("fake/", "fake/<model> names one of the plug-in's models"),
    ],
)
def test_a_bad_plugin_name_is_a_usage_error_naming_the_distribution(fake, name, says, capsys):
    with pytest.raises(UsageError) as caught:
        check_model_name(name)
    assert says in str(caught.value)
    assert main(["run", "--model", name, "--task", TASK, "--out", str(fake / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and "Traceback" not in err


def test_a_plugin_model_that_raises_is_its_own_outcome_scored_and_named(fake, capfd):
    """A plug-in cannot hide the tasks it would fail by failing loudly: its exception is its answer."""
    from apiflow.agent import TrialSpec
    from apiflow.bank import DEFAULT_BANK, load_bank
    from apiflow.runner import play_trial_sync

    row = apiflow.run_task("fake/crash", TASK).to_pylist()[0]
    assert row["termination"] == "no_answer" and not row["harness"] and row["verdict"] == "I"
    assert row["harness_error"] is None
    bank = load_bank(DEFAULT_BANK)
    task = bank.task(TASK)
    spec = TrialSpec(task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name,
                     bank_hash=bank.hash, run_id="r", model_slug="fake-crash")  # fmt: skip
    record = play_trial_sync(spec, make_model("fake/crash", task, 0))
    assert record.apiflow.agent_error == (
        "AgentFault: plug-in model fake/crash (fakeplug 0.1) raised RuntimeError: agent fell over"
    )
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("fake/factory-bug", "plug-in 'fake' (fakeplug 0.1) factory raised KeyError: 'factory bug'"),
        ("hollow/x", "plug-in 'hollow' (fakeplug 0.1) returned object, not a ModelClient"),
    ],
)
def test_a_plugin_that_cannot_be_built_is_a_harness_error_without_traceback(fake, name, says, capfd):
    if name == "fake/factory-bug":
        assert isinstance(make_model(name, _task(), 0), BrokenModel)
    row = apiflow.run_task(name, TASK).to_pylist()[0]
    assert row["termination"] == "harness_error" and row["harness"] and row["verdict"] == ""
    assert says in row["harness_error"]
    err = capfd.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 1


@pytest.mark.slow
def test_a_worker_without_the_plugin_records_harness_errors(tmp_path):
    # The driver checked the names; a worker where the plug-in is missing (or will not import)
    # must turn that into harness errors on its trials, not a dead actor.
    from cluster.spec import GridSpec
    from cluster.worker import TrialRunner

    write_dist(tmp_path, "fakeplug", "fakeplug", SOURCE, {"fake": "fakeplug:plugin"})
    with on_path(tmp_path):
        spec = GridSpec(models=[{"model": "fake/solver"}], tasks={"ids": [TASK]}, out=str(tmp_path / "out"))
        text = spec.model_dump_json()
    with pytest.raises(ValueError, match="no litellm provider"):
        GridSpec.model_validate_json(text)  # here, without the plug-in, the name is unknown
    from cluster.spec import NAMES_CHECKED

    worker_spec = GridSpec.model_validate_json(text, context={NAMES_CHECKED: True})
    assert worker_spec.models[0].slug == "fake-solver"  # the driver's slug travels with the spec
    runner = TrialRunner(worker_spec, "run")
    model = runner._model(worker_spec.models[0], 0, _planned(worker_spec))
    assert isinstance(model, BrokenModel) and "cannot build fake/solver on this worker" in model.reason


def test_prices_table_first_then_declared_then_free(fake):
    table = load_price_table()
    assert model_prices(table, "fake-solver", "fake/solver").input == 2.0  # declared
    assert model_prices(table, "bare-x", "bare/x") == FREE  # declares none: free
    assert model_prices(table, "apiflow-oracle", "apiflow/oracle") is not None  # the table's own entry
    assert model_prices(table, "nobody", "nobody/x") is None  # not a plug-in, not in the table
    row = apiflow.run_task("fake/solver", TASK).to_pylist()[0]
    assert row["cost_usd"] == pytest.approx((1000 * 2.0 + 10 * 8.0) / 1e6)


def test_two_distributions_claiming_one_prefix_are_refused(tmp_path):
    write_dist(tmp_path / "a", "plug-a", "plug_a", SOURCE, {"same": "plug_a:plugin"})
    write_dist(tmp_path / "b", "plug-b", "plug_b", SOURCE, {"same": "plug_b:plugin"})
    with on_path(tmp_path / "a"), on_path(tmp_path / "b"):
        with pytest.raises(UsageError, match="claimed by more than one distribution"):
            check_model_name("same/x")


def test_litellm_route_snapshot_matches_the_installed_litellm():
    litellm = pytest.importorskip("litellm")
    installed = {str(getattr(p, "value", p)) for p in litellm.provider_list}
    assert installed == set(litellm_routes()), "regenerate apiflow/models/litellm_routes.txt"


def test_notebook_api_rows_have_the_grid_schema_and_are_deterministic(fake):
    first = apiflow.run_trials(["apiflow/oracle", "fake/solver"], [TASK, "sample-w01-sub02"], epochs=2)
    assert first.schema == ROW_SCHEMA and first.num_rows == 8
    rows = first.to_pylist()
    assert {r["model"] for r in rows} == {"apiflow-oracle", "fake-solver"}
    assert [r["verdict"] for r in rows if r["model"] == "apiflow-oracle"] == ["C"] * 4
    assert {r["model_api"] for r in rows} == {"apiflow/oracle", "fake/solver"} and {
        r["panel"] for r in rows
    } == {"notebook"}
    again = apiflow.run_trials(["apiflow/oracle", "fake/solver"], [TASK, "sample-w01-sub02"], epochs=2)
    timeless = [c for c in ROW_SCHEMA.names if c not in ("duration_s", "created")]
    assert first.select(timeless).equals(again.select(timeless))


def test_notebook_api_inside_a_running_event_loop_and_bad_input():
    import asyncio

    async def cell():
        return apiflow.run_task("apiflow/oracle", TASK)

    assert asyncio.run(cell()).column("verdict").to_pylist() == ["C"]
    with pytest.raises(UsageError):
        apiflow.run_task("apiflow/nope", TASK)
    with pytest.raises(UsageError):
        apiflow.run_task("apiflow/oracle", "no-such-task")
    with pytest.raises(UsageError):
        apiflow.run_trials([], TASK)


def _planned(spec):
    from apiflow.bank import load_bank
    from cluster.plan import plan_grid

    return plan_grid(spec, load_bank())[0]


def _task():
    from apiflow.bank import load_bank

    return load_bank().task(TASK)
