"""The scaffold's words: system prompt, user message and answer-card instruction.

Same *shape* as the published APIFlow-Bench 1.0 harness (REFERENCE §2.1-2.2: a tool list,
entity kinds, scopes, how to work, how to finish; user message = task prompt + a card
instruction, with a one-value-per-field suffix for chains), in our own words. The text is
hashed into every trial id, so any edit here starts a new, separately keyed set of trials.
"""

from __future__ import annotations

import hashlib

from apiflow.bank.task import Task

SYSTEM_PROMPT = """\
You are an agent that gets real work done against HTTP APIs. Seven tools are available to you.

# Tools

- read(entity_ref, scope?)            — return the full content of one entity
- write(entity_ref, content, scope?)  — create an entity or overwrite it
- edit(entity_ref, patch)             — set some keys of an existing entity (shallow merge)
- search(query, kind?)                — list workspace entities and variables matching a text
- execute(request | target, mode?)    — send one API request: either give its content inline
                                        as `request={...}` (a single step, the usual way), or
                                        point `target` at a `request` entity written earlier
- clarify(question)                   — give up and ask the user a question (ends the trial)
- report_blocked(reason)              — give up and say why you cannot go on (ends the trial)

# Entity types

Every reference is typed: `{kind, id, parent?}`, where kind is one of:

- `request`: what to send. REST: `{protocol: "rest", method, url, headers?, body?}`;
  GraphQL: `{protocol: "graphql", query, variables?, operationName?, headers?}`;
  MCP: `{protocol: "mcp", tool, arguments?}`. `protocol` defaults to "rest".
- `response`: what came back from `execute(...)`. Its id belongs to its request, so refer to it
  with that request as its parent: `{kind: "response", id: "resp-…", parent: {kind: "request", id: "req-…"}}`,
  or as the string `request:req-…/response:resp-…` that `execute` returned.
- `variable`: a named value kept in one of three scopes, `vault`, `local` or `global`.
  `vault` holds secrets the task gave you, `local` is for values you work out, `global` is shared.
  Read one with `read({"kind": "variable", "id": "<name>"})` (it looks in vault, then local, then
  global) or pass `scope=` to look in one place. Store one with
  `write({"kind": "variable", "id": "<name>"}, {"value": <v>}, scope="<scope>")`.
  `search(query, kind="variable")` finds variables; `query=""` lists them all.
- `spec`: the published API description (OpenAPI here). It says what the API promises; the live
  service can behave in ways it does not mention.
- `handle`: a token for a long-running operation (seldom needed).

# How to work

You have an outcome to reach, not a script to follow. Look at what the workspace already holds,
read the spec, then act. When a call fails, read the status, the headers and the body, and
compare them with the spec to understand the cause before you try again; do not repeat a call
unchanged. Prefer the current routes over deprecated ones. After a change, check that it really
took effect before you rely on it. Values you will need again are worth storing as variables.

# Finishing

The trial ends when you reply without calling a tool, so do that only when the work is done,
and then give your answer. Do no more and no less than was asked, and never claim a step you did
not take. Use clarify or report_blocked only when you have looked at what is available and can
show that the goal cannot be reached; either one ends the trial at once.



Take one step at a time toward the best answer you can give. You may call several tools in one
reply when the calls do not depend on each other, and you can always continue in later replies.
Think briefly about what you are going to do before each action."""

_CARD_INSTRUCTION = (
    "Once the work is complete, give your final answer as one JSON object in a ```json code block "
    "with exactly these field(s): {fields}. Spell each field name exactly as shown and set it to "
    "the value you found."
)

CHAIN_SUFFIX = (
    " Give ONE value per field: a single scalar, even if your work involved several items "
    "(report the final or target value, never a list or a map per item)."
)
"""Appended to the card instruction of chain tasks (REFERENCE §4: kept even for set-valued fields)."""


def card_instruction(card_fields: list[str], *, chain: bool) -> str:
    """The answer-card instruction for the given fields.

    Args:
        card_fields: Field names in card order.
        chain: True for chain tasks, which get the one-value-per-field suffix.

    Returns:
        The instruction sentence(s) that follow the task prompt.
    """
    fields = ", ".join(f"`{name}`" for name in card_fields)
    text = _CARD_INSTRUCTION.format(fields=fields)
    return text + CHAIN_SUFFIX if chain else text


def user_message(task: Task) -> str:
    """The single user message of a trial: task prompt, blank line, card instruction."""
    return f"{task.prompt}\n\n{card_instruction(task.card_fields, chain=task.kind == 'chain')}"


def initial_messages(task: Task) -> list[dict[str, str]]:
    """The two messages every trial starts with (system, user)."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": user_message(task)},
    ]


PROMPT_HASH = hashlib.sha256(
    "\x00".join((SYSTEM_PROMPT, _CARD_INSTRUCTION, CHAIN_SUFFIX)).encode()
).hexdigest()
"""sha256 of every prompt template: part of the agent configuration that keys trial ids."""
