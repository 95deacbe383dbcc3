"""``apiflow world serve``: one task's world on a loopback HTTP port, or (``--mcp``) one trial for an MCP agent."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from apiflow.agent.loop import TrialLimits
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.errors import UsageError
from apiflow.serve.http import WorldServer
from apiflow.world import WorldSession


def _serve(args: argparse.Namespace) -> int:
    if args.mcp:
        return _serve_mcp(args)
    if args.transport is not None:
        raise UsageError("--transport goes with --mcp (the plain world server is HTTP)")
    bank = load_bank(args.bank)
    task = bank.task(args.task)
    session = WorldSession(bank.world_of(task), seed=args.seed, state_overrides=task.world_state)
    server = WorldServer(session, port=args.port, verbose=True)
    print(
        f"serving world {task.world} for {task.id} at {server.url} (spec: {server.url}/openapi.json); Ctrl-C stops"
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def _serve_mcp(args: argparse.Namespace) -> int:
    """One trial of the task over MCP; its graded record is written to ``--out``."""
    if args.max_seconds <= 0:
        raise UsageError(f"--max-seconds must be positive, got {args.max_seconds}")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0..65535, got {args.port}")
    try:
        # Imported here: only an MCP trial needs the SDK (the `mcp` extra).
        from apiflow.mcp.serve import ServeOptions, serve_trial
    except ImportError as exc:
        raise UsageError(f"world serve --mcp needs the MCP SDK: pip install -e '.[mcp]' ({exc})") from None
    bank = load_bank(args.bank)
    task = bank.task(args.task)
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create output folder {out}: {exc.strerror}") from None
    limits = TrialLimits(max_messages=args.max_messages, max_seconds=args.max_seconds)
    options = ServeOptions(
        transport=args.transport or "stdio", port=args.port, seed=args.seed, out=out, limits=limits
    )
    try:
        record, _ = asyncio.run(serve_trial(bank, task, options))
    except OSError as exc:
        raise UsageError(str(exc)) from None
    return 1 if record.is_harness_outcome else 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``world serve``."""
    world = sub.add_parser("world", help="work with API worlds directly")
    verbs = world.add_subparsers(dest="world_verb", metavar="VERB", parser_class=type(world))
    serve = verbs.add_parser(
        "serve", help="serve a task's world over HTTP on 127.0.0.1, or one trial to an MCP agent (--mcp)"
    )
    serve.add_argument("--task", required=True, help="task whose world and starting state to serve")
    serve.add_argument("--bank", default=str(DEFAULT_BANK), help="bank folder or shipped bank name: sample (default), v1")
    serve.add_argument("--port", type=int, default=0, help="0 picks a free port")
    serve.add_argument("--seed", type=int, default=0, help="seed of the world session and trial (default 0)")
    serve.add_argument(
        "--mcp", action="store_true", help="serve one graded trial (the seven tools) to an MCP agent instead"
    )
    serve.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default=None,
        help="with --mcp: stdio (default) or streamable HTTP",
    )
    serve.add_argument(
        "--out", default="results", help="with --mcp: where the trial record goes (default ./results)"
    )
    serve.add_argument(
        "--max-messages", type=int, default=500, help="with --mcp: message limit (default 500)"
    )
    serve.add_argument(
        "--max-seconds", type=float, default=1800.0, help="with --mcp: wall-time limit (default 1800)"
    )
    serve.set_defaults(func=_serve)
