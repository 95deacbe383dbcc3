"""Fuzzing the bank loader with corrupted copies of ``bank/sample`` (docs/design/061-untrusted-banks.md).

Byte flips, truncations and garbage in task, chain and world YAML and in the manifest; wrong types
in every field; deep nesting and huge strings. The manifest is re-hashed after each corruption of a
data file, so the content checks (not just the hash check) are what gets exercised. The loader must
either load or raise ``UsageError`` with a one-line message: never another exception, never a hang.
Reproducible: ``derandomize=True``, no example database, explicit ``max_examples``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from untrusted_kit import CHAIN, SUB, WORLD, copy_sample

from apiflow.bank import load_bank, write_manifest
from apiflow.bank.manifest import MANIFEST
from apiflow.errors import UsageError


def fuzz(examples: int) -> settings:
    """The reproducible profile with an explicit example count."""
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


TARGETS = (WORLD, SUB, CHAIN, MANIFEST)
OUTCOMES: Counter[str] = Counter()


@pytest.fixture(scope="module")
def fuzz_bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_sample(tmp_path_factory.mktemp("fuzz") / "bank")


def _try_load(root: Path, rel: str, data: bytes, kind: str) -> None:
    """Write ``data`` over ``rel``, re-hash (unless it is the manifest), load, restore."""
    path, manifest = root / rel, root / MANIFEST
    original, original_manifest = path.read_bytes(), manifest.read_bytes()
    try:
        path.write_bytes(data)
        if rel != MANIFEST:
            write_manifest(root, "sample")
        try:
            load_bank(root)
            OUTCOMES[f"{kind}: loaded"] += 1
        except UsageError as exc:
            message = str(exc)
            assert message and "\n" not in message and len(message) <= 600, message
            OUTCOMES[f"{kind}: refused"] += 1
    finally:
        path.write_bytes(original)
        manifest.write_bytes(original_manifest)


def _dump(data: Any) -> bytes:
    return yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True).encode()


def _mutate(data: bytes, edits: list[tuple[str, int, bytes]]) -> bytes:
    buffer = bytearray(data)
    for op, where, blob in edits:
        at = where % (len(buffer) + 1)
        if op == "flip" and buffer:
            buffer[at % len(buffer)] ^= blob[0] or 1
        elif op == "truncate":
            del buffer[at:]
        elif op == "insert":
            buffer[at:at] = blob
        elif op == "delete":
            del buffer[at : at + len(blob)]
    return bytes(buffer)


EDITS = st.lists(
    st.tuples(
        st.sampled_from(["flip", "flip", "truncate", "insert", "delete"]),
        st.integers(min_value=0, max_value=200_000),
        st.one_of(
            st.binary(min_size=1, max_size=8),
            st.sampled_from([b"&a [*a]", b"*id001", b"!!python/object:os.system", b"[[[[", b"{", b"\x00", b"\t",
                             b": ", b"- ", b"\n  ", b"'", b'"\\u', b"\xff", b"---\n", b"~"]),
        ),
    ),
    min_size=1,
    max_size=6,
)


@fuzz(150)
@given(target=st.sampled_from(TARGETS), edits=EDITS)
def test_byte_level_corruption_loads_or_refuses_in_one_line(
    fuzz_bank: Path, target: str, edits: list[tuple[str, int, bytes]]
) -> None:
    _try_load(fuzz_bank, target, _mutate((fuzz_bank / target).read_bytes(), edits), "bytes")


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: (_replaced(v, rest, new) if k == head else v) for k, v in value.items()}
    return [(_replaced(v, rest, new) if i == head else v) for i, v in enumerate(value)]


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


WRONG = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(["x" * 70_000, "{{ " * 5_000, "(a+)+$", "(a)\\1", "../../etc/passwd", "/v3/{a}{b}",
                     "\u202e\u0000", "sample-w01-sub99", "w99", "chain"]),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.integers(min_value=60, max_value=200).map(_nested),
)


@fuzz(120)
@given(target=st.sampled_from((WORLD, SUB, CHAIN)), pick=st.integers(min_value=0), new=WRONG)
def test_wrong_typed_values_anywhere_load_or_refuse_in_one_line(
    fuzz_bank: Path, target: str, pick: int, new: Any
) -> None:
    data = yaml.load((fuzz_bank / target).read_text(), Loader=yaml.CSafeLoader)
    paths = list(_paths(data))
    corrupted = _replaced(data, paths[pick % len(paths)], new)
    _try_load(fuzz_bank, target, _dump(corrupted), "typed")


def _one_of_each_field(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key path, taking only the first element of each list (every field of every model)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from _one_of_each_field(item, (*prefix, key))
    elif isinstance(value, list) and value:
        yield from _one_of_each_field(value[0], (*prefix, 0))


def test_every_field_with_every_wrong_type(fuzz_bank: Path) -> None:
    wrong = [None, {"k": [2**64]}]  # absent-ish and structurally wrong; the random test covers the rest
    fields = 0
    for target in (SUB, CHAIN, WORLD):
        data = yaml.load((fuzz_bank / target).read_text(), Loader=yaml.CSafeLoader)
        seen: set[tuple[str, ...]] = set()
        for path in _one_of_each_field(data):
            shape = tuple(str(p) for p in path if not isinstance(p, int))
            if shape in seen:
                continue  # one representative per field name path (routes.rules.when.at, ...)
            seen.add(shape)
            fields += 1
            for new in wrong:
                corrupted = _replaced(data, path, new)
                _try_load(fuzz_bank, target, _dump(corrupted), "fields")
    assert fields > 60


def test_report_example_counts() -> None:
    """Prints what the fuzz tests above tried (run with -s); fails if they tried nothing."""
    print("\nbank loader fuzzing:", json.dumps(dict(sorted(OUTCOMES.items()))))
    if OUTCOMES:
        assert sum(OUTCOMES.values()) > 0
