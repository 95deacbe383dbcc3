from pathlib import Path

import pytest

from apiflow.analysis.panels import BOARD_UPDATE, ORIGINAL_19, panel_of
from apiflow.bank import load_bank
from apiflow.errors import UsageError
from apiflow.results.taskid import TaskRef, check_task_id, parse_task_id, solo_task_id

BANKS = Path(__file__).resolve().parents[2] / "bank"


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


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("../../etc-w01-sub01", "path separator"),
        ("a/b-w01-sub01", "path separator"),
        ("a\\b-w01-sub01", "path separator"),
        ("v1..x-w01-sub01", "'..'"),
        ("v1-w01-sub01\n", "control"),  # ``$`` alone would match before the newline
        ("v1\x00-w01-sub01", "control"),
        ("v1\x1b[2J-w01-sub01", "control"),
        ("v1-w01-sub01\x7f", "control"),
        ("v1\u2028-w01-sub01", "control"),
    ],
)
def test_a_task_id_that_is_no_safe_name_is_refused_naming_why(bad, why):
    """Task ids come from banks and records (untrusted) and end up in file and member names."""
    with pytest.raises(UsageError, match=why) as error:
        parse_task_id(bad)
    assert repr(bad) in str(error.value) and "\n" not in str(error.value)
    with pytest.raises(UsageError, match=why):
        check_task_id(bad)


@pytest.mark.parametrize("bank", ["sample", "v1"])
def test_every_task_id_of_the_shipped_banks_parses(bank):
    ids = list(load_bank(BANKS / bank).tasks)
    assert ids and all(check_task_id(t) == t for t in ids)
    refs = [parse_task_id(t) for t in ids]
    assert {r.bank for r in refs} == {bank} and {r.kind for r in refs} == {"solo", "chain"}


def test_solo_task_id_round_trips():
    assert solo_task_id("v56", "w04", 7) == "v56-w04-sub07"
    assert parse_task_id(solo_task_id("v1", "w02", 11)).length == 11


def test_panels():
    assert panel_of("kimi-k3") == BOARD_UPDATE
    assert panel_of("gpt-5.5") == ORIGINAL_19
    assert panel_of("apiflow/oracle") == ""
