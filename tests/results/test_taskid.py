import pytest

from apiflow.analysis.panels import BOARD_UPDATE, ORIGINAL_19, panel_of
from apiflow.errors import UsageError
from apiflow.results.taskid import TaskRef, parse_task_id, solo_task_id


@pytest.mark.parametrize(
    ("task_id", "ref"),
    [
        ("v56-w01-sub01", TaskRef("v56", "w01", "solo", 1)),
        ("v56-w18-chain-1to14", TaskRef("v56", "w18", "chain", 14)),
        ("sample-w01-chain-1to03", TaskRef("sample", "w01", "chain", 3)),
        ("v1-w07-sub12", TaskRef("v1", "w07", "solo", 12)),
        ("my-bank-2-w03-sub02", TaskRef("my-bank-2", "w03", "solo", 2)),
    ],
)
def test_parse_task_id(task_id, ref):
    assert parse_task_id(task_id) == ref


@pytest.mark.parametrize("bad", ["v56-w01", "w01-sub01", "v56-w01-chain-2to05", "v56-w01-sub", ""])
def test_bad_task_ids_are_usage_errors(bad):
    with pytest.raises(UsageError):
        parse_task_id(bad)


def test_solo_task_id_round_trips():
    assert solo_task_id("v56", "w04", 7) == "v56-w04-sub07"
    assert parse_task_id(solo_task_id("v1", "w02", 11)).length == 11


def test_panels():
    assert panel_of("kimi-k3") == BOARD_UPDATE
    assert panel_of("gpt-5.5") == ORIGINAL_19
    assert panel_of("apiflow/oracle") == ""
