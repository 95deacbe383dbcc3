"""Banks: task and world data files, content-hash manifests, loading and chain composition."""

from apiflow.bank.chain import ChainFile, compose_chain
from apiflow.bank.loader import DEFAULT_BANK, Bank, load_bank
from apiflow.bank.manifest import build_manifest, verify_manifest, write_manifest
from apiflow.bank.task import GoldenCall, GoldenStep, SeedVariable, Task, TaskId

__all__ = [
    "DEFAULT_BANK",
    "Bank",
    "ChainFile",
    "GoldenCall",
    "GoldenStep",
    "SeedVariable",
    "Task",
    "TaskId",
    "build_manifest",
    "compose_chain",
    "load_bank",
    "verify_manifest",
    "write_manifest",
]
