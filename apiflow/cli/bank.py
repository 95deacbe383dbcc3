"""``apiflow bank build|verify|stats|screen-eval|audit``: generate a bank, check its integrity and gates,
describe its shape, measure the cell screen on planted splits, and audit its grading against the
adversarial models."""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from pathlib import Path

from apiflow.bank.loader import DEFAULT_BANK, Bank, load_bank
from apiflow.bank.manifest import verify_manifest
from apiflow.errors import UsageError
from apiflow.resources import resolve


def _verify(args: argparse.Namespace) -> int:
    root = resolve("bank", args.bank)
    if not root.is_dir():
        raise UsageError(f"bank folder {root} does not exist")
    manifest, problems = verify_manifest(root)
    for problem in problems:
        print(f"FAIL manifest  {problem}")
    if problems:
        print(f"bank {root}: REFUSED ({len(problems)} problem(s))")
        return 1
    print(f"ok   manifest  {len(manifest['files'])} files match")  # type: ignore[arg-type]
    bank = load_bank(root)
    print(f"ok   load      {len(bank.worlds)} world(s), {len(bank.tasks)} task(s)")
    if args.manifest_only:
        print(f"bank {bank.name} {bank.hash}: VERIFIED (manifest only)")
        return 0
    from apiflow.authoring.gates import verify_bank

    if args.oracle_model:
        from apiflow.models.registry import check_model_name

        check_model_name(args.oracle_model)
    started, cpu = time.perf_counter(), time.process_time()
    log = verify_bank(bank, oracle_model=args.oracle_model)
    for gate, row in log.summary().items():
        status = "ok  " if row["failed"] == 0 else "FAIL"
        print(f"{status} {gate:<20} {row['passed']} passed, {row['failed']} failed")
    for failure in log.failures()[:20]:
        print(f"FAIL {failure.gate:<20} {failure.task_id}: {failure.detail}")
    report_ok = _check_report(root, log, args.oracle_model)
    took = f"{time.process_time() - cpu:.1f} s CPU, {time.perf_counter() - started:.1f} s wall"
    if log.failures() or not report_ok:
        print(f"bank {bank.name} {bank.hash}: REFUSED ({len(log.failures())} gate failure(s), {took})")
        return 1
    print(f"bank {bank.name} {bank.hash}: VERIFIED ({len(log.results)} gate checks, {took})")
    return 0


def _check_report(root: Path, log: object, oracle_model: str | None) -> bool:
    """The re-run must reproduce the validation report the bank was published with."""
    path = root / "validation.json"
    if not path.is_file():
        print("--   report               no validation.json beside this bank")
        return True
    if oracle_model:
        print("--   report               not compared (a different oracle was used)")
        return True
    try:
        recorded = json.loads(path.read_text())["results"]
    except (ValueError, KeyError, TypeError, RecursionError) as exc:  # a bank file: untrusted
        print(f"FAIL report               unreadable validation.json ({exc})")
        return False
    rerun = [r.as_dict() for r in log.results]  # type: ignore[attr-defined]
    if recorded != rerun:
        first = next((i for i, (a, b) in enumerate(zip(recorded, rerun, strict=False)) if a != b), len(rerun))
        print(f"FAIL report               re-run differs from validation.json (first at result #{first})")
        return False
    print(f"ok   report               {len(rerun)} recorded gate results reproduced")
    return True


def _stats(args: argparse.Namespace) -> int:
    bank = load_bank(args.bank)
    print(f"bank {bank.name}  hash {bank.hash[:16]}  worlds {len(bank.worlds)}  tasks {len(bank.tasks)}")
    tasks = list(bank.tasks.values())
    solos = [t for t in tasks if t.kind == "solo"]
    for title, counts in (
        ("world", Counter(t.world for t in tasks)),
        ("kind", Counter(t.kind for t in tasks)),
        ("axis (solo)", Counter(t.axis or "-" for t in solos)),
        ("difficulty (solo)", Counter(t.difficulty or "-" for t in solos)),
        ("chain length", Counter(t.length for t in tasks if t.kind == "chain")),
    ):
        print(f"{title}: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    for wid in bank.worlds:
        axes = Counter(t.axis for t in solos if t.world == wid)
        diffs = Counter(t.difficulty for t in solos if t.world == wid)
        print(
            f"  {wid}: "
            + " ".join(f"{a}={n}" for a, n in sorted(axes.items()))
            + " | "
            + " ".join(f"{d}={n}" for d, n in sorted(diffs.items()))
        )
    return 0


def _build(args: argparse.Namespace) -> int:
    from apiflow.authoring.generate import build_bank

    if args.seed < 0:  # the seed names the split (s<seed>), and a bank name takes no '-'
        raise UsageError("--seed must be >= 0")
    if args.worlds is not None and not 1 <= args.worlds <= 13:
        raise UsageError("--worlds must be between 1 and 13")
    if args.oracle_model:
        from apiflow.models.registry import check_model_name

        check_model_name(args.oracle_model)
    if not 0 <= args.plant_underspecified <= 10:
        raise UsageError("--plant-underspecified must be between 0 and 10 (chains per world)")
    started = time.perf_counter()
    manifest = build_bank(
        args.seed,
        args.out,
        worlds=args.worlds,
        name=args.name,
        oracle_model=args.oracle_model,
        progress=print,
        carry=_world_list(args.carry_predicates, "--carry-predicates"),
        plant=args.plant_underspecified,
    )
    files = manifest["files"]
    print(
        f"bank {manifest['bank']} {manifest['hash']}: {len(files)} files written to {args.out} "  # type: ignore[arg-type]
        f"in {time.perf_counter() - started:.1f} s"
    )
    return 0


def _screen_eval(args: argparse.Namespace) -> int:
    from apiflow.authoring.screen_eval import evaluate, panel_models

    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        raise UsageError(f"--seeds takes comma-separated integers (got {args.seeds!r})") from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise UsageError("--seeds needs at least one seed, each once")
    if min(seeds) < 0:  # a seed names its split (s<seed>p), and a bank name takes no '-'
        raise UsageError("--seeds must be >= 0")
    if not 1 <= args.epochs <= 20:
        raise UsageError("--epochs must be between 1 and 20")
    if args.worlds is not None and not 1 <= args.worlds <= 13:
        raise UsageError("--worlds must be between 1 and 13")
    if not 1 <= args.per_world <= 10:
        raise UsageError("--per-world must be between 1 and 10")
    if not 1 <= args.jobs <= 64:
        raise UsageError("--jobs must be between 1 and 64")
    models = panel_models(args.panel)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file, not a folder")
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    record = evaluate(
        seeds,
        models,
        out,
        epochs=args.epochs,
        worlds=args.worlds,
        per_world=args.per_world,
        jobs=args.jobs,
        progress=print,
    )
    for s in record["scores"]:
        split = "pooled" if s["seed"] is None else f"s{s['seed']}p"
        share = {k: "n/a" if s[k] is None else f"{s[k]:.3f}" for k in ("precision", "recall")}
        print(
            f"{split:<7} passes<={s['threshold']}: flagged {s['flagged']:>4}, planted {s['planted']:>3}, "
            f"hits {s['hits']:>3}, precision {share['precision']}, recall {share['recall']}"
        )
    print(
        f"{record['trials']} trials in {time.perf_counter() - started:.0f} s; report section in {out / 'screen_eval.md'}"
    )
    return 0


def _world_list(text: str | None, flag: str) -> list[str]:
    """``all`` or comma-separated world ids ``w01,w08`` (empty when the flag is not given)."""
    if text is None:
        return []
    items = [w.strip() for w in text.split(",") if w.strip()]
    bad = [w for w in items if w != "all" and not re.fullmatch(r"w\d{2}", w)]
    if not items or bad:
        raise UsageError(f"{flag} takes 'all' or world ids like w08,w10 (got {text!r})")
    return items


def _audit(args: argparse.Namespace) -> int:
    from apiflow.agent.trial import GRADING_RULES
    from apiflow.authoring.audit import audit_bank, record_text, render_grounds, render_table
    from apiflow.grading.rules import rule_set

    if args.sample is not None and args.sample < 1:
        raise UsageError("--sample must be at least 1")
    if not 1 <= args.epochs <= 100:
        raise UsageError("--epochs must be between 1 and 100")
    if not 0 <= args.replay_epochs <= 100:
        raise UsageError("--replay-epochs must be between 0 and 100")
    judged = rule_set(args.rules or GRADING_RULES)  # an unknown name: one line, before any work
    bank = load_bank(args.bank)
    report = audit_bank(bank, sample=args.sample, epochs=args.epochs, seed=args.seed, rules=judged.name)
    print(
        f"bank {bank.name} {bank.hash[:16]}: {len(report.tasks)} task(s) x {args.epochs} epoch(s), "
        f"{sum(report.trials.values())} adversarial trials ({report.not_applicable} not applicable), "
        f"{report.seconds:.1f} s"
    )
    print(f"passes/trials under {report.rules}; [n] = passes under {report.reference} where it differs")
    for line in render_table(report):
        print(line)
    print(f"trials refused on each ground under {report.rules} [published-1.0 where it differs]:")
    for line in render_grounds(report):
        print(line)
    published = report.passing(report.reference)
    print(f"{report.reference} (for information) would let through {len(published)} adversarial trial(s)")
    probes = report.passing(informational=True)
    if probes:
        print(
            f"* informational probes passing (work the task contract leaves ungraded, not an audit failure): "
            f"{len(probes)} under {report.rules}"
        )
    record = report.as_dict()
    if args.replay_epochs:
        from apiflow.authoring.replay_values import measure

        tasks = [bank.tasks[t] for t in report.tasks]
        figures = measure(bank, tasks, args.replay_epochs, seed=args.seed)
        print(f"replayable values over {args.replay_epochs} oracle trial(s) of each task:")
        print(f"  {'class':<9} {'seen':>7} {'distinct':>9} {'shared':>7} {'bits/trial':>10} {'nominal':>8}")
        for v in figures:
            nominal = "-" if v.nominal_bits is None else str(v.nominal_bits)
            print(
                f"  {v.name:<9} {v.seen:>7} {v.distinct:>9} {v.shared:>7} {v.bits_between_trials:>10.2f} {nominal:>8}"
            )
        record["replay_values"] = {"epochs": args.replay_epochs, "classes": [v.as_dict() for v in figures]}
    if args.json:
        Path(args.json).write_text(record_text(record))
        print(f"audit written to {args.json}")
    failing = report.passing()
    for e in failing[:20]:
        print(f"EXPLOIT {e['adversary']} passes {e['task']} (epoch {e['epoch']}) under {e['rules']}")
    harness_ok = args.no_hostile or _hostile_section(bank, args)
    if failing:
        print(
            f"bank {bank.name}: AUDIT FAILED ({len(failing)} passing adversarial trial(s) under {report.rules})"
        )
    if failing or not harness_ok:
        return 1
    held = "" if args.no_hostile else "; the harness held against every hostile agent"
    print(f"bank {bank.name}: AUDIT PASSED (no adversary passes any task under {report.rules}{held})")
    return 0


def _hostile_section(bank: Bank, args: argparse.Namespace) -> bool:
    """The harness section (``apiflow/hostile:*``): its table and failed checks; True when it held."""
    from apiflow.authoring.hostile_audit import audit_hostile, render_hostile

    hostile = audit_hostile(bank, sample=args.sample, seed=args.seed)
    trials = sum(row.trials for row in hostile.rows.values())
    print(f"hostile agents (harness attacks): {trials} trials of epoch 1, {hostile.seconds:.1f} s")
    for line in render_hostile(hostile):
        print(line)
    for e in hostile.exploits[:20]:
        print(f"HARNESS EXPLOIT {e['adversary']} on {e['task']}: {e['check']} failed ({e['detail']})")
    if not hostile.sound:
        failed = len(hostile.exploits)
        print(f"bank {bank.name}: HARNESS AUDIT FAILED ({failed} failed check(s) on hostile trials)")
    return hostile.sound


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``bank build``, ``bank verify``, ``bank stats``, ``bank screen-eval`` and ``bank audit``."""
    bank = sub.add_parser("bank", help="generate, verify and describe task banks")
    verbs = bank.add_subparsers(dest="bank_verb", metavar="VERB", parser_class=type(bank))
    build = verbs.add_parser(
        "build", help="generate a bank from a seed (zero-LLM, deterministic, gate-certified)"
    )
    build.add_argument("--seed", type=int, required=True, help="generator seed: one seed, one private split")
    build.add_argument("--out", required=True, help="folder to write the bank into")
    build.add_argument("--worlds", type=int, default=None, help="build only the first N worlds")
    build.add_argument("--name", default=None, help="bank name (default: v1 for the v1 seed, else s<seed>)")
    build.add_argument(
        "--oracle-model", default=None, help="solvability oracle (default: offline golden variation)"
    )
    build.add_argument(
        "--carry-predicates",
        default=None,
        metavar="WORLDS",
        help="'all' or world ids (w08,w10) whose chains 1..K also grade segments 1..K-1's G1 predicates",
    )
    build.add_argument(
        "--plant-underspecified",
        type=int,
        default=0,
        metavar="N",
        help="drop a mid-chain step's detail from N chain prompts per world (screen evaluation); "
        "the planted cells go to <out>.planted.json beside the bank",
    )
    build.set_defaults(func=_build)
    verify = verbs.add_parser("verify", help="re-check a bank's manifest and re-run every gate offline")
    verify.add_argument("bank", nargs="?", default=str(DEFAULT_BANK), help="bank folder or shipped bank name: sample (default), v1")
    verify.add_argument("--manifest-only", action="store_true", help="skip the gates")
    verify.add_argument(
        "--oracle-model", default=None, help="solvability oracle (default: offline golden variation)"
    )
    verify.set_defaults(func=_verify)
    stats = verbs.add_parser("stats", help="tasks per world, axis, difficulty and chain length")
    stats.add_argument("bank", nargs="?", default=str(DEFAULT_BANK), help="bank folder or shipped bank name: sample (default), v1")
    stats.set_defaults(func=_stats)
    screen = verbs.add_parser(
        "screen-eval", help="precision/recall of the zero-pass cell screen on planted underspecified chains"
    )
    screen.add_argument("--seeds", default="1,2,3", help="planted splits to build (default 1,2,3)")
    screen.add_argument(
        "--panel", default="calibrated", help="calibrated (default), sims, or comma-separated offline models"
    )
    screen.add_argument("--epochs", type=int, default=5, help="trials per model and chain (default 5)")
    screen.add_argument(
        "--worlds", type=int, default=None, help="build only the first N worlds (default all)"
    )
    screen.add_argument("--per-world", type=int, default=2, help="planted chains per world (default 2)")
    screen.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    screen.add_argument("--out", required=True, help="folder for screen_eval.json and its banks and trials")
    screen.set_defaults(func=_screen_eval)
    audit = verbs.add_parser(
        "audit",
        help="run every adversarial model (apiflow/adv:*, then apiflow/hostile:*) on the bank; non-zero if "
        "any passes or the harness gives way",
    )
    audit.add_argument("bank", nargs="?", default=str(DEFAULT_BANK), help="bank folder or shipped bank name: sample (default), v1")
    audit.add_argument("--sample", type=int, default=None, help="audit N tasks chosen by hash (default all)")
    audit.add_argument("--epochs", type=int, default=1, help="trials per adversary and task (default 1)")
    audit.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    audit.add_argument("--rules", default=None, help="judged rule set (default: the live-trial rules)")
    audit.add_argument("--json", default=None, metavar="OUT", help="write the audit as JSON")
    audit.add_argument(
        "--replay-epochs",
        type=int,
        default=0,
        metavar="N",
        help="also measure refs, tokens and canaries over N oracle trials per task (default 0: skip)",
    )
    audit.add_argument(
        "--no-hostile",
        action="store_true",
        help="skip the harness section (apiflow/hostile:* agents that attack the harness, not the grader)",
    )
    audit.set_defaults(func=_audit)
