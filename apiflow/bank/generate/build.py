"""Grow worlds subtask by subtask, certify each through the gates, and write a bank folder.

Zero LLM and deterministic: every random choice comes from a stream derived by sha256 from
(seed, world, step, attempt), files are dumped with stable key order, and the validation
report holds no timings — so the same seed gives byte-identical files and manifest.
"""

from __future__ import annotations

import copy
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from apiflow.bank.chain import ChainFile, compose_chain
from apiflow.bank.gates import check_chains, check_solo
from apiflow.bank.gates.result import GateLog
from apiflow.bank.generate.assemble import chain_prompt, solo_data, world_data
from apiflow.bank.generate.axes import AXES
from apiflow.bank.generate.domains import DOMAINS
from apiflow.bank.generate.draft import Ctx, Draft
from apiflow.bank.generate.init import init_world, root, vault
from apiflow.bank.generate.plan import V1_SEED, WorldShape, bank_shape, storyline
from apiflow.bank.generate.routes import RouteBook
from apiflow.bank.generate.values import Minter, derive_rng
from apiflow.bank.manifest import write_manifest
from apiflow.bank.task import Task
from apiflow.errors import UsageError
from apiflow.world import HttpRequest, WorldDef, WorldSession

REVISIONS = 4


class _Dumper(yaml.CSafeDumper if hasattr(yaml, "CSafeDumper") else yaml.SafeDumper):  # type: ignore[misc]
    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_yaml(data: Any) -> str:
    """Stable YAML text (no anchors, insertion order kept)."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110)


def state_diff(base: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """What ``new`` changes relative to ``base`` (deep-mergeable; per-route call counts dropped)."""
    out: dict[str, Any] = {}
    for key, value in new.items():
        if key == "_calls":
            continue
        if key not in base:
            out[key] = value
        elif isinstance(value, dict) and isinstance(base[key], dict):
            sub = state_diff(base[key], value)
            if sub:
                out[key] = sub
        elif value != base[key]:
            out[key] = value
    return out


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def replay_state(world: WorldDef, tasks: list[Task]) -> dict[str, Any]:
    """The world state after the golden runs of ``tasks`` in order (a chain prefix), as a diff."""
    session = WorldSession(world, seed=0)
    for task in tasks:
        for step in task.golden:
            for call in step.calls:
                if call.name == "execute":
                    req = call.arguments["request"]
                    headers = {k.lower(): v for k, v in (req.get("headers") or {}).items()}
                    session.send(HttpRequest(req["method"], req["url"], headers, req.get("body")))
    return state_diff(world.state, session.state)


@dataclass(slots=True)
class WorldBuild:
    """One grown world: its document, solo and chain documents, and the gate log."""

    world: dict[str, Any]
    solos: list[dict[str, Any]] = field(default_factory=list)
    chains: list[dict[str, Any]] = field(default_factory=list)
    log: GateLog = field(default_factory=GateLog)
    revisions: list[str] = field(default_factory=list)


def grow_world(
    bank: str, seed: int, index: int, shape: WorldShape, domain_index: int, oracle_model: str | None = None
) -> WorldBuild:
    """Initialise world ``index`` once, then add subtasks one by one, each admitted only through its gates."""
    wid = f"w{index + 1:02d}"
    dom = DOMAINS[domain_index]
    mint, book = Minter(derive_rng(seed, wid, "values")), RouteBook()
    state: dict[str, Any] = {}
    world = init_world(wid, dom, derive_rng(seed, wid, "init"), mint, book)
    plan = storyline(derive_rng(seed, wid, "plan"), shape.subs)
    parent, used_res = root(dom), list[str]()
    leaves: dict[tuple[str, str], Any] = {("vault", k): v for k, v in vault(world).items()}
    accepted: list[Task] = []
    drafts: list[Draft] = []
    build = WorldBuild(world={})
    for k, (axis, difficulty) in enumerate(plan, start=1):
        for attempt in range(REVISIONS):
            snap, state_snap, used_snap = book.snapshot(), copy.deepcopy(state), list(used_res)
            ctx = Ctx(
                k,
                axis,
                difficulty,
                derive_rng(seed, wid, k, attempt),
                world,
                mint,
                book,
                state,
                parent,
                used_res,
            )
            draft = AXES[axis](ctx)
            wdef = WorldDef.model_validate(world_data(world, book, state))
            ws = _deep_merge(replay_state(wdef, accepted), draft.state_extra)
            seed_vars = dict(leaves)
            seed_vars.update({("local", n): v for n, v in draft.seed_locals.items()})
            doc = solo_data(bank, world, k, axis, difficulty, draft, seed_vars, ws)
            doc["prompt"] += story_link(derive_rng(seed, wid, k, attempt, "story"), parent, k)
            task = Task.model_validate(doc)
            log = GateLog()
            if check_solo(task, wdef, log, oracle_model=oracle_model):
                build.log.results.extend(log.results)
                break
            build.revisions.append(
                f"{task.id} attempt {attempt}: " + "; ".join(f"{r.gate}: {r.detail}" for r in log.failures())
            )
            book.restore(snap)
            state.clear()
            state.update(state_snap)
            used_res[:] = used_snap
        else:
            raise UsageError(
                f"{wid} sub{k:02d} ({axis}) failed its gates after {REVISIONS} revisions: "
                f"{build.revisions[-1]}"
            )
        accepted.append(task)
        drafts.append(draft)
        parent = draft.output
        leaves[("local", "access_token")] = world.token
        leaves[("local", draft.output.var)] = draft.output.value
    final = WorldDef.model_validate(world_data(world, book, state))
    build.world = world_data(world, book, state)
    build.solos = [_solo_doc(t) for t in accepted]
    subs = {t.length: t for t in accepted}
    rng = derive_rng(seed, wid, "chains")
    chain_tasks: list[Task] = []
    for K in range(2, shape.max_chain + 1):
        doc = chain_prompt(rng, drafts[:K], bank, wid, K)
        chain_tasks.append(compose_chain(ChainFile.model_validate(doc), accepted[:K]))
        build.chains.append(doc)
    check_chains(chain_tasks, final, subs, build.log)
    bad = sorted({r.task_id for r in build.log.failures()})
    if bad:
        # A chain that fails its gates is truncated: it and every longer chain are dropped, never padded.
        first = min(t.length for t in chain_tasks if t.id in bad)
        build.chains = [c for c in build.chains if c["length"] < first]
        build.revisions.append(f"{wid}: chains truncated before 1to{first:02d}")
    return build


def story_link(rng: Any, parent: Any, k: int) -> str:
    """A sentence tying solo step k to the step before it (sometimes none): where its input lives."""
    if k == 1:
        return ""
    return rng.choice(
        (
            "",
            f" Context: the previous run left {parent.var} = {parent.value} in my local vars.",
            f" ({parent.value} came out of yesterday's run; it is in local vars as {parent.var}.)",
            f" This picks up where the last step stopped, with {parent.value} (local var {parent.var}).",
            f" Everything from the earlier steps is still in the workspace, {parent.var} included.",
        )
    )


def _solo_doc(task: Task) -> dict[str, Any]:
    data = task.model_dump(mode="json", by_alias=True)
    order = [
        "id",
        "world",
        "kind",
        "length",
        "axis",
        "difficulty",
        "prompt",
        "card_fields",
        "seed",
        "predicates",
        "checkpoints",
        "constraints",
        "golden",
        "world_state",
    ]
    out = {k: data[k] for k in order if k in data and data[k] not in (None, {}, [])}
    out["golden"] = [
        {k: v for k, v in step.items() if k != "segment" and not (k == "decoy" and v is None)}
        for step in out.get("golden", [])
    ]
    for pred in out["predicates"]:
        if pred.get("segment") is None:
            pred.pop("segment", None)
    return out


def _report_text(report: dict[str, Any]) -> str:
    """The validation report: summary keys indented, then one JSON line per gate result."""
    head = {k: v for k, v in report.items() if k != "results"}
    text = json.dumps(head, indent=1)[:-2] + ',\n "results": [\n'
    text += ",\n".join("  " + json.dumps(r, ensure_ascii=False) for r in report["results"])
    return text + "\n ]\n}\n"


def build_bank(
    seed: int,
    out: str | Path,
    *,
    worlds: int | None = None,
    name: str | None = None,
    oracle_model: str | None = None,
    progress: Any = None,
) -> dict[str, Any]:
    """Generate, certify and write a bank; returns the manifest."""
    name = name or ("v1" if seed == V1_SEED else f"s{seed}")
    shapes = bank_shape()[: worlds or None]
    order = list(range(len(DOMAINS)))
    derive_rng(seed, "domains").shuffle(order)
    root_dir = Path(out)
    if root_dir.exists():
        shutil.rmtree(root_dir)
    (root_dir / "worlds").mkdir(parents=True)
    (root_dir / "tasks").mkdir()
    report: dict[str, Any] = {"bank": name, "seed": seed, "gates": {}, "revisions": [], "results": []}
    for index, shape in enumerate(shapes):
        build = grow_world(name, seed, index, shape, order[index], oracle_model)
        wid = build.world["id"]
        (root_dir / "worlds" / f"{wid}.yaml").write_text(dump_yaml(build.world))
        for doc in build.solos + build.chains:
            (root_dir / "tasks" / f"{doc['id']}.yaml").write_text(dump_yaml(doc))
        report["revisions"] += build.revisions
        report["results"] += [r.as_dict() for r in build.log.results]
        if progress:
            progress(
                f"{wid}: {len(build.solos)} subtasks, {len(build.chains)} chains, "
                f"{len(build.log.failures())} gate failure(s)"
            )
    gates: dict[str, dict[str, int]] = {}
    for r in report["results"]:
        row = gates.setdefault(r["gate"], {"passed": 0, "failed": 0})
        row["passed" if r["ok"] else "failed"] += 1
    report["gates"] = dict(sorted(gates.items()))
    (root_dir / "validation.json").write_text(_report_text(report))
    return write_manifest(root_dir, name)
