"""Prompt shapes (REFERENCE §2.1-2.2): our words, the published structure."""

from __future__ import annotations

from apiflow.agent.prompts import (
    CHAIN_SUFFIX,
    SYSTEM_PROMPT,
    card_instruction,
    initial_messages,
    user_message,
)

from .fakes import tiny_task


def test_system_prompt_sections_and_tools() -> None:
    for heading in ("# Tools", "# Entity types", "# How to work", "# Finishing"):
        assert heading in SYSTEM_PROMPT
    for tool in ("read(", "write(", "edit(", "search(", "execute(", "clarify(", "report_blocked("):
        assert f"- {tool}" in SYSTEM_PROMPT
    for word in (
        "`request`",
        "`response`",
        "`variable`",
        "`spec`",
        "`handle`",
        "`vault`",
        "`local`",
        "`global`",
    ):
        assert word in SYSTEM_PROMPT


def test_user_message_is_prompt_blank_line_card_instruction() -> None:
    solo, chain = tiny_task("solo"), tiny_task("chain")
    assert user_message(solo) == f"{solo.prompt}\n\n{card_instruction(['plan_id', 'count'], chain=False)}"
    assert "`plan_id`, `count`" in user_message(solo) and "```json" in user_message(solo)
    assert not user_message(solo).endswith(CHAIN_SUFFIX) and user_message(chain).endswith(CHAIN_SUFFIX)
    assert [m["role"] for m in initial_messages(solo)] == ["system", "user"]
