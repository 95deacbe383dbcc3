"""G1 predicates over the evidence: ``data_flow``, ``new_response``, ``workspace_values``.

Each check returns an ``Outcome``: passed, failed (with the first-failure message in
the published structure, REFERENCE §5.3), or unsettled (``passed is None``) when the
only response that could decide it has an unknown body. An unsettled outcome is
never turned into a guess.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from apiflow.grading.evidence import Evidence, Exchange, value_text
from apiflow.grading.routes import url_regex
from apiflow.grading.rules import RuleSet
from apiflow.grading.spec import DataFlowSpec, NewResponseSpec, WorkspaceValueSpec

_DECODER = json.JSONDecoder()


class Outcome(NamedTuple):
    """One predicate's result: ``passed is None`` when the evidence cannot settle it."""

    passed: bool | None
    message: str = ""


PASS = Outcome(True)


def leaves(value: Any) -> Iterator[Any]:
    """Scalar leaves under ``value`` in document order (``None`` leaves carry nothing)."""
    if isinstance(value, dict):
        for item in value.values():
            yield from leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from leaves(item)
    elif value is not None:
        yield value


_CONTAINERS = (dict, list)


def _find_any_depth(body: Any, key: str, found: list[Any]) -> bool:
    """Whether ``key`` is a key at any depth of ``body``; the leaves under each hit go to ``found``.

    Recurses only into containers (a scalar child cannot hold the key: no call for it), and a
    scalar value under the key is appended as it is (what ``leaves`` would yield). Document order.
    """
    hit = False
    if isinstance(body, dict):
        if key in body:
            hit = True
            value = body[key]
            if isinstance(value, _CONTAINERS):
                found.extend(leaves(value))
            elif value is not None:
                found.append(value)
        for item in body.values():
            if isinstance(item, _CONTAINERS) and _find_any_depth(item, key, found):
                hit = True
    elif isinstance(body, list):
        for item in body:
            if isinstance(item, _CONTAINERS) and _find_any_depth(item, key, found):
                hit = True
    return hit


def _flatten(node: Any) -> Iterator[Any]:
    if isinstance(node, list):
        for item in node:
            yield from _flatten(item)
    else:
        yield node


def _find_path(body: Any, path: str, found: list[Any]) -> bool:
    nodes = [body]
    for segment in path.split("."):
        nodes = [n[segment] for node in nodes for n in _flatten(node) if isinstance(n, dict) and segment in n]
        if not nodes:
            return False
    for node in nodes:
        found.extend(leaves(node))
    return True


def body_values(body: Any, key: str, rules: RuleSet) -> tuple[bool, list[Any]]:
    """Whether a response body carries ``key`` under ``rules``, and the leaf values it holds."""
    found: list[Any] = []
    if rules.body_key == "dotted_path":
        return _find_path(body, key, found), found
    return _find_any_depth(body, key.rsplit(".", 1)[-1], found), found


def _scan_preview(preview: str, key: str) -> tuple[bool, list[Any]]:
    """Keys and complete values visible in a cut preview (the last-segment rule only)."""
    name = key.rsplit(".", 1)[-1]
    pattern = re.compile('"' + re.escape(json.dumps(name, ensure_ascii=False)[1:-1]) + r'"\s*:\s*')
    found: list[Any] = []
    hit = False
    for match in pattern.finditer(preview):
        hit = True
        try:
            value, _ = _DECODER.raw_decode(preview, match.end())
        except ValueError:
            continue  # value cut by the truncation: present but unknown
        found.extend(leaves(value))
    return hit, found


def _unique(values: list[Any]) -> list[Any]:
    seen: list[Any] = []
    for value in values:
        if value not in seen:
            seen.append(value)
    return seen


def statuses(value: Any) -> list[Any]:
    """A recorded status as a list (a regraded payload may hold one status or several)."""
    return list(value) if isinstance(value, list | tuple) else [value]


def _carried(
    spec: DataFlowSpec, evidence: Evidence, rules: RuleSet
) -> tuple[int, list[tuple[int, Any]], bool]:
    """(responses carrying the key, (exchange index, value) pairs, any unknown body matched)."""
    pattern = url_regex(spec.from_response_url_pattern)
    wanted = statuses(spec.from_status)
    carriers, unsure = 0, False
    values: list[tuple[int, Any]] = []
    for exchange in evidence.exchanges:
        if exchange.status not in wanted or not pattern.search(exchange.url):
            continue
        if rules.seen_only and exchange.preview is not None:
            continue  # the agent never saw this body whole: it cannot be the value's source
        if exchange.body_known:
            hit, found = body_values(exchange.response_body, spec.from_body_key, rules)
        else:
            unsure = True
            preview_usable = rules.body_key == "last_segment_any_depth" and exchange.preview
            hit, found = (
                _scan_preview(exchange.preview or "", spec.from_body_key) if preview_usable else (False, [])
            )
        if hit:
            carriers += 1
            values.extend((exchange.index, v) for v in found)
    return carriers, values, unsure


def _used_later(values: list[tuple[int, Any]], targets: list[Exchange], rules: RuleSet) -> bool:
    texts = [(target.index, target.text) for target in targets]
    for index, value in values:
        needle = value_text(value)
        if not needle:
            continue
        for target_index, text in texts:
            if rules.used_in == "later" and target_index <= index:
                continue
            if needle in text:
                return True
    return False


def _stored(values: list[tuple[int, Any]], evidence: Evidence, rules: RuleSet) -> bool:
    needles = {value_text(v) for _, v in values} - {""}
    if rules.stored == "substring":
        texts = [value_text(v) for v in evidence.variables.values()]
        return any(needle in text for needle in needles for text in texts)
    held = {value_text(v) for v in evidence.variables.values()}
    held.update(value_text(leaf) for v in evidence.variables.values() for leaf in leaves(v))
    return bool(needles & held)


def data_flow(spec: DataFlowSpec, evidence: Evidence, rules: RuleSet, number: int) -> Outcome:
    """A response of this trial carried the key; its value was re-used and/or stored when required.

    Args:
        spec: The predicate.
        evidence: The trial's evidence.
        rules: The rule set (body-key matching, "later" vs "any time", storing).
        number: 1-based index among the task's ``data_flow`` predicates (for messages).
    """
    head = f"data_flow predicate #{number} failed: "
    carriers, values, unsure = _carried(spec, evidence, rules)
    if not carriers:
        message = (
            f"{head}no response matched url~{spec.from_response_url_pattern!r} "
            f"status in {statuses(spec.from_status)!r} carrying body key {spec.from_body_key!r}"
        )
        return Outcome(None if unsure else False, message)
    problems: list[str] = []
    target = spec.used_in_request_url_pattern
    if target:
        pattern = url_regex(target)
        targets = [e for e in evidence.exchanges if pattern.search(e.url)]
        if not _used_later(values, targets, rules):
            later = "later " if rules.used_in == "later" else ""
            shown = _unique([v for _, v in values])  # only a failure message shows the values
            problems.append(f"{head}value(s) {shown!r} were not used in any {later}request to url~{target!r}")
    if spec.must_be_stored and not _stored(values, evidence, rules):
        shown = _unique([v for _, v in values])
        problems.append(f"{head}value(s) {shown!r} were not stored in any workspace variable")
    if not problems:
        return PASS
    return Outcome(None if unsure else False, problems[0])


def _response_summary(exchange: Exchange) -> dict[str, Any]:
    body = exchange.response_body
    keys = list(body) if isinstance(body, dict) else []
    return {"status": exchange.status, "url": exchange.url, "method": exchange.method, "body_keys": keys}


def new_response_detail(spec: NewResponseSpec) -> dict[str, Any]:
    """The predicate's ``detail`` in the published key order."""
    return {
        "explain": spec.explain,
        "prompt_quote": spec.prompt_quote,
        "segment": spec.segment,
        "status": spec.status,
        "method": spec.method,
        "url_pattern": spec.url_pattern,
        "body_has_keys": list(spec.body_has_keys),
    }


def new_response(spec: NewResponseSpec, evidence: Evidence, rules: RuleSet, number: int) -> Outcome:
    """Some response of this trial matches the URL pattern (and status/method/body keys when given)."""
    pattern = url_regex(spec.url_pattern)
    unsure = False
    for exchange in evidence.exchanges:
        if not exchange.has_response or not pattern.search(exchange.url):
            continue
        if spec.status is not None and exchange.status not in statuses(spec.status):
            continue
        if spec.method is not None and exchange.method != spec.method.upper():
            continue
        if not spec.body_has_keys:
            return PASS
        if rules.seen_only and exchange.preview is not None:
            continue
        if not exchange.body_known:
            unsure = True
            continue
        if all(body_values(exchange.response_body, key, rules)[0] for key in spec.body_has_keys):
            return PASS
    detail = new_response_detail(spec)
    available = [_response_summary(e) for e in evidence.exchanges if e.has_response]
    return Outcome(
        None if unsure else False,
        f"no new response matched predicate #{number}: {detail!r}; available={available!r}",
    )


def workspace_values(spec: WorkspaceValueSpec, evidence: Evidence, number: int) -> Outcome:
    """The value is a substring of the final value of some variable the agent wrote."""
    needle = value_text(spec.value)
    if needle and any(needle in value_text(v) for v in evidence.variables.values()):
        return PASS
    return Outcome(
        False,
        f"workspace_values #{number} value {spec.value!r} not found in the agent's "
        "new/changed workspace state",
    )
