"""``apiflow world serve``: one task's world on a loopback HTTP port."""

from __future__ import annotations

import argparse

from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.serve.http import WorldServer
from apiflow.world import WorldSession


def _serve(args: argparse.Namespace) -> int:
    bank = load_bank(args.bank)
    task = bank.task(args.task)
    session = WorldSession(bank.world_of(task), seed=args.seed, state_overrides=task.world_state)
    server = WorldServer(session, port=args.port, verbose=True)
    print(f"serving world {task.world} for {task.id} at {server.url} (spec: {server.url}/openapi.json); Ctrl-C stops")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``world serve``."""
    world = sub.add_parser("world", help="work with API worlds directly")
    verbs = world.add_subparsers(dest="world_verb", metavar="VERB", parser_class=type(world))
    serve = verbs.add_parser("serve", help="serve a task's world over HTTP on 127.0.0.1")
    serve.add_argument("--task", required=True, help="task whose world and starting state to serve")
    serve.add_argument("--bank", default=str(DEFAULT_BANK))
    serve.add_argument("--port", type=int, default=0, help="0 picks a free port")
    serve.add_argument("--seed", type=int, default=0)
    serve.set_defaults(func=_serve)
