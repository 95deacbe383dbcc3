"""The transition memo against the world itself: random request sequences, sharing prefixes, give
every trial the answers (status, headers, body) it gets with the memo empty.

Requests are drawn from the golden requests of a sample world's tasks, in this trial's per-trial
canary forms or as the bank wrote them, and perturbed (another method, a header dropped, a body value
changed to a value of another type), so sequences walk deep paths (authenticated, created entities)
and step off them.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from apiflow.agent import trial as agent_trial
from apiflow.agent.canaries import canary_literals, trial_salting
from apiflow.agent.ids import derived_seed
from apiflow.agent.replay import Replay
from apiflow.world import WorldSession

from .strategies import fuzz_settings, sample_bank

TASK = "sample-w01-chain-1to07"


def _pool() -> list[dict[str, Any]]:
    """Golden requests of every task of the world, as written and in this trial's canary forms."""
    bank = sample_bank()
    task = bank.task(TASK)
    world = bank.world_of(task)
    spec = WorldSession(world, 0).spec_content()
    codec, _ = trial_salting(task, canary_literals(task, spec), derived_seed("canary", 0, task.id, 1))
    requests = []
    for other in bank.tasks.values():
        if bank.world_of(other) is not world:
            continue
        for step in other.golden:
            for call in step.calls:
                request = call.arguments.get("request") if call.name == "execute" else None
                if isinstance(request, dict):
                    requests.append(request)
                    requests.append(codec.salt_value(request))
    return requests


def _perturb(request: dict[str, Any], how: int, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(request)
    if how == 1:
        out["method"] = {"GET": "POST", "POST": "GET"}.get(out.get("method", "GET"), "DELETE")
    elif how == 2:
        out.pop("headers", None)
    elif how == 3 and isinstance(out.get("body"), dict) and out["body"]:
        out["body"] = {key: value for key in out["body"]}  # every field a value of another type
    elif how == 3:
        out["body"] = {"unexpected": value}
    return out


_VALUES = st.sampled_from([1, 1.0, True, "1", None, 0.0, -0.0, [], {}, "x" * 3])
_STEP = st.tuples(st.integers(0, 10_000), st.integers(0, 6), _VALUES)  # how > 3: unperturbed


def _play(steps: list[tuple[int, int, Any]], pool: list[dict[str, Any]], replay: Replay) -> list[tuple[Any, ...]]:
    bank = sample_bank()
    task = bank.task(TASK)
    trial = agent_trial._Trial(task, bank.world_of(task), 0, 1, replay)
    toolbox = trial.setup()
    results = []
    for index, how, value in steps:
        request = _perturb(pool[index % len(pool)], how, value)
        result = toolbox.call("execute", {"request": request})
        results.append(result.content)
    assert trial.workspace is not None
    answers = [
        (e.response.status, e.response.headers, e.response.body)
        if e.response is not None
        else e.network_error
        for e in trial.workspace.exchanges
    ]
    return [*results, *answers]


@fuzz_settings(100)
@given(
    first=st.lists(_STEP, min_size=1, max_size=12),
    second=st.lists(_STEP, max_size=12),
    shared=st.integers(0, 12),
    twin=st.tuples(st.integers(1, 3), _VALUES),
)
def test_memo_answers_are_the_worlds(first: list[Any], second: list[Any], shared: int, twin: Any) -> None:
    pool = _pool()
    if shared < len(first):
        # Where the two part, the second sends the first's request (unperturbed there) perturbed:
        # another method, no headers, a body value of another type; a key missing any would replay.
        first = [*first[:shared], (first[shared][0], 4, None), *first[shared + 1 :]]
        second = [*first[:shared], (first[shared][0], *twin), *second]
    else:
        second = [*first, *second]
    alone = _play(second, pool, Replay())
    replay = Replay()
    memo = replay.transitions
    _play(first, pool, replay)
    hits = memo.hits
    after_first = _play(second, pool, replay)
    assert after_first == alone
    if shared:
        assert memo.hits > hits  # the shared prefix was answered from the memo
