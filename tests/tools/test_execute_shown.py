"""The execute result is written as its ref and the response's part (``shown_response``), the latter kept
on the response for every later trial it is replayed to: the text must be ``dumps`` of the whole dict."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apiflow.tools.execute import body_preview, shown_response
from apiflow.world.http import HttpResponse, body_text
from apiflow.world.jsontext import dumps

_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=30,
)
_bodies = _json | st.text(max_size=1500) | st.just("x" * 700) | st.just({"items": ["é" * 400, "a" * 400]})


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(
    status=st.integers(100, 599),
    headers=st.dictionaries(_text, _text, max_size=4),
    body=_bodies,
    known_text=st.booleans(),
    ref=_text | st.just("request:req-6b8674/response:resp-5e809b1e"),
)
def test_the_result_is_dumps_of_the_whole(
    status: int, headers: dict[str, str], body: Any, known_text: bool, ref: str
) -> None:
    response = HttpResponse(status, headers, body, body_text(body) if known_text else None)
    whole = dumps(
        {
            "response_ref": ref,
            "status": status,
            "headers": dict(headers),
            "body_preview": body_preview(response),
        }
    )
    assert '{"response_ref": ' + dumps(ref) + shown_response(response, dict(headers)) == whole


def test_a_replayed_response_is_shown_alike_to_every_trial() -> None:
    """``execute_request`` keeps the shown part on the response; a second trial's result differs only by its ref."""
    from apiflow.agent import trial as agent_trial
    from apiflow.agent.replay import Replay
    from apiflow.bank import DEFAULT_BANK, load_bank

    bank = load_bank(DEFAULT_BANK)
    task = bank.task("sample-w01-chain-1to07")
    request = next(
        c.arguments for s in task.golden for c in s.calls if c.name == "execute" and "request" in c.arguments
    )
    results, replay = [], Replay()
    for _ in range(2):
        trial = agent_trial._Trial(task, bank.world_of(task), 0, 1, replay)
        toolbox = trial.setup()
        results.append(toolbox.call("execute", request).content)
        assert trial.workspace is not None
        response = trial.workspace.exchanges[-1].response
        assert response is not None and response.shown is not None
    assert replay.transitions.hits >= 1  # the second trial was shown the first one's response object
    assert results[0] == results[1]  # same seeds: same ref too
