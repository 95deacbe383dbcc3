"""A bank task's id is one safe name: its grammar ends at the end of the string (the rest of the
grammar, ``[a-z0-9]+-wNN-…``, already leaves no room for a separator, ``..`` or a control character)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from apiflow.bank import load_bank
from apiflow.bank.task import TASK_ID_RE, Task


@pytest.mark.parametrize("bad", ["sample-w01-sub01\n", "sample-w01-chain-1to02\n"])
def test_a_task_id_ending_in_a_newline_is_refused(bad: str) -> None:
    """``$`` matches before a final newline; the id would carry it into file and member names."""
    assert TASK_ID_RE.match(bad) is None
    task = load_bank().task("sample-w01-sub01")
    with pytest.raises(ValidationError, match="task id"):
        Task.model_validate({**task.model_dump(), "id": bad})
