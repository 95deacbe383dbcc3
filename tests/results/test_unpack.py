"""``apiflow transcripts unpack`` writes an archive's members only inside ``transcripts/``: a member
that would land outside (``..``, an absolute name, a symbolic link on the way or as the member) is
refused, one line naming it, exit 2, and nothing of its archive is written."""

from __future__ import annotations

import io
import os
import shutil
import stat
import tempfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from apiflow.cli import main
from apiflow.errors import UsageError
from apiflow.results import archives
from apiflow.results.rows import record_to_row
from apiflow.results.store import ResultStore, model_token

DEPTH = 14
"""Folders above the grid inside the test's own folder: a member climbing out with up to DEPTH
``..`` still lands where the test looks (the bug this guards against wrote there)."""


def _grid(top: Path, make_record) -> tuple[ResultStore, str]:
    """A grid DEPTH folders below ``top`` with one committed batch; its archive's path."""
    store = ResultStore(str(top.joinpath(*[f"d{i}" for i in range(DEPTH)], "grid")))
    store.write_manifest({"grid_id": "g"})
    batch = [make_record(trial_id=f"{i:032x}", epoch=i + 1) for i in range(2)]
    ids = [r.apiflow.trial_id for r in batch]
    assert store.put_batch(ids, [(r, record_to_row(r)) for r in batch])
    return store, store.archive_path(ids)


def _files(top: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in top.rglob("*") if p.is_file() and not p.is_symlink()}


def _good(store: ResultStore) -> tuple[str, bytes]:
    return archives.member_name(model_token("apiflow/sim:careful"), "f" * 32), b'{"ok":1}'


@pytest.mark.parametrize(
    "bad",
    [
        "../../escaped.json",
        "model=m/../../../escaped.json",
        "..\\..\\escaped.json",
        "{top}/escaped.json",  # absolute
        "",
        "model=m/",
    ],
)
def test_a_member_leaving_the_folder_is_refused_and_nothing_of_its_archive_is_written(
    tmp_path, make_record, capsys, bad
):
    store, archive = _grid(tmp_path, make_record)
    bad = bad.format(top=tmp_path)
    store.overwrite(archive, archives.archive_bytes([_good(store), (bad, b"pwned")]))
    before = _files(tmp_path)
    assert main(["transcripts", "unpack", store.url]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and repr(bad) in err and archive in err
    assert _files(tmp_path) == before  # not even the good member that came first


def test_a_symbolic_link_member_is_refused(tmp_path, make_record, capsys):
    store, archive = _grid(tmp_path, make_record)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as opened:
        link = zipfile.ZipInfo("model=m/link.json")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        opened.writestr(link, str(tmp_path / "outside.json"))
    store.overwrite(archive, buffer.getvalue())
    before = _files(tmp_path)
    assert main(["transcripts", "unpack", store.url]) == 2
    assert "'model=m/link.json' is a symbolic link" in capsys.readouterr().err
    assert _files(tmp_path) == before


def test_the_target_is_checked_by_its_resolved_path_not_its_name(tmp_path, make_record, capsys):
    """A folder below transcripts/ that is a symbolic link out of it: a member whose name looks
    harmless would be written through it."""
    store, archive = _grid(tmp_path, make_record)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, Path(store.root) / "transcripts" / "model=m")
    store.overwrite(archive, archives.archive_bytes([("model=m/a.json", b"x")]))
    assert main(["transcripts", "unpack", store.url]) == 2
    assert "'model=m/a.json' would be written outside" in capsys.readouterr().err
    assert list(outside.iterdir()) == []


def test_one_member_a_folder_of_another_is_refused(tmp_path, make_record):
    store, archive = _grid(tmp_path, make_record)
    store.overwrite(archive, archives.archive_bytes([("model=m", b"x"), ("model=m/a.json", b"y")]))
    with pytest.raises(UsageError, match="needs member 'model=m' to be a folder"):
        store.unpack_archives()


_TOKENS = st.sampled_from(["..", "/", "\\", ".", "a", "b", "c.json", "model=m"])
_NAMES = st.lists(_TOKENS, max_size=DEPTH - 2).map("".join)


def test_no_archive_member_lands_outside_its_folder(tmp_path, make_record):
    template = tmp_path / "template"
    _, archive = _grid(template, make_record)
    archive_rel = Path(archive).relative_to(template)

    @settings(max_examples=150, deadline=None)
    @given(names=st.lists(_NAMES, min_size=1, max_size=4))
    def check(names: list[str]) -> None:
        with tempfile.TemporaryDirectory(dir=tmp_path) as scratch:
            top = Path(scratch) / "top"
            shutil.copytree(template, top, symlinks=True)
            store = ResultStore(str(top.joinpath(*[f"d{i}" for i in range(DEPTH)], "grid")))
            members = [(name, f"body {i}".encode()) for i, name in enumerate(names)]
            store.overwrite(str(top / archive_rel), archives.archive_bytes(members))
            before = _files(top)
            try:
                store.unpack_archives()
            except UsageError as exc:
                event("refused")
                assert any(repr(name) in str(exc) for name in names), str(exc)
                assert _files(top) == before  # refused: nothing written
                return
            event("written")
            folder = os.path.realpath(Path(store.root) / "transcripts")
            for path in set(_files(top)) - set(before):
                resolved = os.path.realpath(path)
                assert os.path.commonpath([folder, resolved]) == folder, (names, path)

    check()


@pytest.mark.s3
def test_on_an_object_store_a_member_climbing_out_is_refused_too(s3_url, make_record, capsys):
    url, options = s3_url
    store = ResultStore(url, storage_options=options)
    store.write_manifest({"grid_id": "g"})
    batch = [make_record(trial_id=f"{i:032x}", epoch=i + 1) for i in range(2)]
    ids = [r.apiflow.trial_id for r in batch]
    store.put_batch(ids, [(r, record_to_row(r)) for r in batch])
    store.overwrite(
        store.archive_path(ids), archives.archive_bytes([("model=m/../../../escaped.json", b"x")])
    )
    bucket = store.root.split("/", 1)[0]
    before = sorted(store.fs.find(bucket))
    with pytest.raises(UsageError, match="'model=m/../../../escaped.json' would be written outside"):
        store.unpack_archives()
    store.fs.invalidate_cache()
    assert sorted(store.fs.find(bucket)) == before
