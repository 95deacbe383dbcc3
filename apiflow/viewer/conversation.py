"""A trial's conversation as HTML: messages in order, tool calls and results collapsible.

The system prompt is the same for thousands of trials, so it is not repeated on every trial page:
each distinct prompt is written once under ``prompts/`` and the trial page links to it (the
biggest single saving of site size; docs/design/083-viewer.md).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from apiflow.viewer.html import esc, esc_text, pretty

_SUMMARY_CHARS = 120


@dataclass
class Conversation:
    """The rendered messages plus the system prompts they referred to (hash -> text)."""

    html: str
    prompts: dict[str, str] = field(default_factory=dict)


def prompt_page(digest: str) -> str:
    """Where a system prompt's page lives, relative to the site root."""
    return f"prompts/{digest}.html"


def render_conversation(messages: list[Any], *, up: str) -> Conversation:
    """All messages of a trial; ``up`` is the relative path from the trial page to the site root."""
    prompts: dict[str, str] = {}
    parts = []
    for number, message in enumerate(messages, start=1):
        if not isinstance(message, dict):
            parts.append(_block(number, "unknown", f"<pre>{esc_text(pretty(message))}</pre>"))
            continue
        role = str(message.get("role", "unknown"))
        if role == "system" and isinstance(message.get("content"), str):
            text = message["content"]
            digest = hashlib.sha256(text.encode()).hexdigest()[:16]
            prompts[digest] = text
            link = f'<a href="{up}{prompt_page(digest)}">system prompt</a> ({len(text):,} characters, shared)'
            parts.append(_block(number, role, f"<p>{link}</p>"))
        elif role == "tool":
            parts.append(_block(number, role, _tool_result(message)))
        else:
            body = _content(message.get("content")) + _tool_calls(message.get("tool_calls"))
            parts.append(_block(number, role, body))
    return Conversation(html=f'<div class="conversation">{"".join(parts)}</div>', prompts=prompts)


def _block(number: int, role: str, body: str) -> str:
    return (
        f'<section class="msg r-{esc(role)}" id="msg-{number}">'
        f'<div class="role">#{number} {esc(role)}</div>{body}</section>'
    )


def _content(content: Any) -> str:
    if content is None or content == "" or content == []:
        return ""
    if isinstance(content, str):
        return f'<pre class="text">{esc_text(content)}</pre>'
    if not isinstance(content, list):
        return f"<pre>{esc_text(pretty(content))}</pre>"
    out = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            if block.get("text"):
                out.append(f'<pre class="text">{esc_text(block["text"])}</pre>')
        elif kind == "reasoning":
            text = str(block.get("reasoning") or "")
            out.append(_details(f"reasoning ({len(text):,} characters)", text, "reasoning"))
        else:
            out.append(_details("content block", pretty(block), "block"))
    return "".join(out)


def _tool_calls(calls: Any) -> str:
    if not calls:
        return ""
    if not isinstance(calls, list):
        return _details("tool calls", pretty(calls), "call")
    out = []
    for call in calls:
        if not isinstance(call, dict):
            out.append(_details("tool call", pretty(call), "call"))
            continue
        arguments = pretty(call.get("arguments"))
        title = f"→ {call.get('name', '?')}  {_one_line(arguments)}"
        out.append(_details(title, arguments, "call", anchor=call.get("id")))
    return "".join(out)


def _tool_result(message: dict[str, Any]) -> str:
    name = message.get("function") or "tool"
    error = message.get("error")
    content = pretty(message.get("content") or "")
    if error:
        text = pretty(error)
        return _details(f"← {name}  ERROR {_one_line(text)}", text, "result error", opened=True)
    return _details(f"← {name}  {_one_line(content)}", content, "result")


def _details(title: str, text: str, css: str, *, anchor: Any = None, opened: bool = False) -> str:
    ident = f' id="call-{esc(anchor)}"' if anchor else ""
    state = " open" if opened else ""
    return (
        f'<details class="{css}"{ident}{state}><summary>{esc_text(title)}</summary>'
        f"<pre>{esc_text(text)}</pre></details>"
    )


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _SUMMARY_CHARS else flat[: _SUMMARY_CHARS - 1] + "…"
