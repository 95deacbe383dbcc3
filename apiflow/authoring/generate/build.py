"""Grow worlds subtask by subtask, certify each through the gates, and write a bank folder.

Zero LLM and deterministic: every random choice comes from a stream derived by sha256 from
(seed, world, step, attempt), files are dumped with stable key order, and the validation
report holds no timings — so the same seed gives byte-identical files and manifest.
"""

from __future__ import annotations

import copy
import json
import random
import shutil
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from apiflow.authoring.gates import check_chains, check_solo
from apiflow.authoring.gates.chains import carried_golden_misses
from apiflow.authoring.gates.result import GateLog
from apiflow.authoring.generate.assemble import chain_prompt, solo_data, world_data
from apiflow.authoring.generate.axes import AXES
from apiflow.authoring.generate.draft import Ctx, Draft
from apiflow.authoring.generate.init import init_world, root, vault
from apiflow.authoring.generate.library import DOMAINS
from apiflow.authoring.generate.plan import V1_SEED, WorldShape, bank_shape, storyline
from apiflow.authoring.generate.plant import (
    PlantedCell,
    blurred,
    candidates,
    detail_is_graded,
    write_side_file,
)
from apiflow.authoring.generate.routes import RouteBook
from apiflow.authoring.generate.values import Minter, derive_rng
from apiflow.bank.chain import ChainFile, compose_chain
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
    planted: list[PlantedCell] = field(default_factory=list)


class _Grower:
    """One world being grown: its route book, state, accepted subtasks and what they leave behind."""

    def __init__(self, bank: str, seed: int, wid: str, domain_index: int, oracle_model: str | None) -> None:
        self.bank, self.seed, self.wid, self.oracle_model = bank, seed, wid, oracle_model
        dom = DOMAINS[domain_index]
        self.mint, self.book = Minter(derive_rng(seed, wid, "values")), RouteBook()
        self.state: dict[str, Any] = {}
        self.world = init_world(wid, dom, derive_rng(seed, wid, "init"), self.mint, self.book)
        self.parent, self.used_res = root(dom), list[str]()
        self.leaves: dict[tuple[str, str], Any] = {("vault", k): v for k, v in vault(self.world).items()}
        self.accepted: list[Task] = []
        self.drafts: list[Draft] = []
        self.build = WorldBuild(world={})

    def _attempt(self, k: int, axis: str, difficulty: str, attempt: int) -> tuple[Task, Draft, WorldDef]:
        """Draft step k (variant ``attempt``) into the world and assemble its solo task."""
        rng = derive_rng(self.seed, self.wid, k, attempt)
        ctx = Ctx(
            k, axis, difficulty, rng, self.world, self.mint, self.book, self.state, self.parent, self.used_res
        )
        draft = AXES[axis](ctx)
        wdef = WorldDef.model_validate(world_data(self.world, self.book, self.state))
        ws = _deep_merge(replay_state(wdef, self.accepted), draft.state_extra)
        seed_vars = dict(self.leaves)
        seed_vars.update({("local", n): v for n, v in draft.seed_locals.items()})
        doc = solo_data(self.bank, self.world, k, axis, difficulty, draft, seed_vars, ws)
        doc["prompt"] += story_link(derive_rng(self.seed, self.wid, k, attempt, "story"), self.parent, k)
        return Task.model_validate(doc), draft, wdef

    def add_step(self, k: int, axis: str, difficulty: str) -> None:
        """Admit step k through its gates, revising (redrawing) it up to ``REVISIONS`` times."""
        for attempt in range(REVISIONS):
            snap, state_snap, used_snap = self.book.snapshot(), copy.deepcopy(self.state), list(self.used_res)
            task, draft, wdef = self._attempt(k, axis, difficulty, attempt)
            log = GateLog()
            if check_solo(task, wdef, log, oracle_model=self.oracle_model):
                self.build.log.results.extend(log.results)
                break
            self.build.revisions.append(
                f"{task.id} attempt {attempt}: " + "; ".join(f"{r.gate}: {r.detail}" for r in log.failures())
            )
            self.book.restore(snap)
            self.state.clear()
            self.state.update(state_snap)
            self.used_res[:] = used_snap
        else:
            raise UsageError(
                f"{self.wid} sub{k:02d} ({axis}) failed its gates after {REVISIONS} revisions: "
                f"{self.build.revisions[-1]}"
            )
        self.accepted.append(task)
        self.drafts.append(draft)
        self.parent = draft.output
        self.leaves[("local", "access_token")] = self.world.token
        self.leaves[("local", draft.output.var)] = draft.output.value

    def add_chains(self, max_chain: int, options: ChainOptions) -> None:
        """Chains 1to02..1toK, certified together; a failing chain is truncated with every longer one.

        ``options.carry``: each chain 1..K also grades the G1 predicates of segments 1..K-1.
        ``options.plant``: that many chains get a mid-chain step's detail dropped from their prompt.
        """
        final = WorldDef.model_validate(world_data(self.world, self.book, self.state))
        rng = derive_rng(self.seed, self.wid, "chains")
        chain_tasks: list[Task] = []
        states = []  # the prompt stream before each chain: a planted prompt is redrawn from it
        for length in range(2, max_chain + 1):
            states.append(rng.getstate())
            doc = chain_prompt(rng, self.drafts[:length], self.bank, self.wid, length)
            if options.carry:
                doc["carries"] = list(range(1, length))
            chain_tasks.append(compose_chain(ChainFile.model_validate(doc), self.accepted[:length]))
            self.build.chains.append(doc)
        if options.carry:
            chain_tasks = self._drop_uncarriable(chain_tasks, final)
        if options.plant:
            self._plant(options.plant, chain_tasks, states, final)
        check_chains(chain_tasks, final, {t.length: t for t in self.accepted}, self.build.log)
        bad = sorted({r.task_id for r in self.build.log.failures()})
        if bad:
            # Never padded: the first failing chain and every longer one are dropped.
            first = min(t.length for t in chain_tasks if t.id in bad)
            self.build.chains = [c for c in self.build.chains if c["length"] < first]
            self.build.planted = [c for c in self.build.planted if c.length < first]
            self.build.revisions.append(f"{self.wid}: chains truncated before 1to{first:02d}")

    def _drop_uncarriable(self, chain_tasks: list[Task], final: WorldDef) -> list[Task]:
        """Carry only what a chain's own golden run satisfies: a segment whose stored value a later
        segment overwrites is left out of ``carries`` for that chain (and the chain recomposed)."""
        misses = carried_golden_misses(chain_tasks, final)
        out = []
        for doc, task in zip(self.build.chains, chain_tasks, strict=True):
            if misses.get(task.id):
                doc["carries"] = [j for j in doc["carries"] if j not in misses[task.id]]
                task = compose_chain(ChainFile.model_validate(doc), self.accepted[: doc["length"]])
            out.append(task)
        return out

    def _plant(self, count: int, chain_tasks: list[Task], states: list[Any], final: WorldDef) -> None:
        """Replace ``count`` chains' prompts by ones missing a mid-chain step's detail (one step per chain).

        A candidate is skipped when the dropped words still occur in the prompt (another step
        names them) or when taking the look-alike would still pass (the detail is not graded).
        """
        lengths = [t.length for t in chain_tasks]
        for k, j in candidates(self.drafts, lengths, derive_rng(self.seed, self.wid, "plant")):
            if len(self.build.planted) == count:
                break
            index, detail = lengths.index(k), self.drafts[j - 1].detail
            if detail is None or any(c.length == k for c in self.build.planted):
                continue
            stream = random.Random()
            stream.setstate(states[index])
            doc = chain_prompt(stream, blurred(self.drafts[:k], j), self.bank, self.wid, k)
            if detail.phrase.strip() in doc["prompt"] or not detail_is_graded(
                chain_tasks[index], final, detail, j
            ):
                continue
            if "carries" in self.build.chains[index]:
                doc["carries"] = self.build.chains[index]["carries"]
            self.build.chains[index] = doc
            chain_tasks[index] = compose_chain(ChainFile.model_validate(doc), self.accepted[:k])
            self.build.planted.append(PlantedCell(doc["id"], self.wid, k, j, detail.phrase.strip()))
            self.build.log.add(
                doc["id"], "plant_graded", True, f"segment {j} without {detail.phrase.strip()!r}"
            )
        if len(self.build.planted) < count:
            self.build.revisions.append(f"{self.wid}: {len(self.build.planted)} of {count} cells planted")


@dataclass(frozen=True, slots=True)
class ChainOptions:
    """How a world's chains are composed beyond the v1 shape (both off: exactly the v1 shape)."""

    carry: bool = False
    plant: int = 0


def grow_world(
    bank: str,
    seed: int,
    index: int,
    shape: WorldShape,
    domain_index: int,
    oracle_model: str | None = None,
    options: ChainOptions | None = None,
) -> WorldBuild:
    """Initialise world ``index`` once, then add subtasks one by one, each admitted only through its gates."""
    wid = f"w{index + 1:02d}"
    grower = _Grower(bank, seed, wid, domain_index, oracle_model)
    for k, (axis, difficulty) in enumerate(storyline(derive_rng(seed, wid, "plan"), shape.subs), start=1):
        grower.add_step(k, axis, difficulty)
    grower.build.world = world_data(grower.world, grower.book, grower.state)
    grower.build.solos = [_solo_doc(t) for t in grower.accepted]
    grower.add_chains(shape.max_chain, options or ChainOptions())
    return grower.build


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
    carry: Collection[str] | None = None,
    plant: int = 0,
) -> dict[str, Any]:
    """Generate, certify and write a bank; returns the manifest.

    Args:
        carry: World ids (or ``"all"``) whose chains carry earlier segments' G1 predicates
            (``ChainFile.carries``); None or empty: none do, and the bank is the plain shape.
        plant: Underspecified chains to plant per world (``generate/plant.py``); the planted
            cells are recorded beside the bank in ``<out>.planted.json``. 0: none, no side file.
    """
    carry = frozenset(carry or ())
    variant = ("c" if carry else "") + ("p" if plant else "")
    name = name or ("v1" if seed == V1_SEED and not variant else f"s{seed}{variant}")
    shapes = bank_shape()[: worlds or None]
    order = list(range(len(DOMAINS)))
    derive_rng(seed, "domains").shuffle(order)
    root_dir = Path(out)
    if root_dir.exists():
        if root_dir.is_file() or (any(root_dir.iterdir()) and not (root_dir / "manifest.json").is_file()):
            raise UsageError(f"refusing to overwrite {root_dir}: it exists and is not a bank folder")
        shutil.rmtree(root_dir)
    (root_dir / "worlds").mkdir(parents=True)
    (root_dir / "tasks").mkdir()
    report: dict[str, Any] = {"bank": name, "seed": seed, "gates": {}, "revisions": [], "results": []}
    planted: list[PlantedCell] = []
    for index, shape in enumerate(shapes):
        options = ChainOptions("all" in carry or f"w{index + 1:02d}" in carry, plant)
        build = grow_world(name, seed, index, shape, order[index], oracle_model, options)
        planted += build.planted
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
    manifest = write_manifest(root_dir, name)
    if plant:
        write_side_file(root_dir, manifest, plant, planted)
    return manifest
