"""``apiflow view``: RESULTS -> a static site that opens from disk.

Streaming, like ``transcripts ingest``: the main process reads the trial files a chunk at a time,
worker processes parse, classify, render and write each chunk's trial pages, and at most a few
chunks are in flight. Only the small digests come back, so the index pages of a 44k-trial grid are
built without holding 44k transcripts (or shipping their pages between processes).

A trial page's file name comes from its model and trial key, so two records of one trial (the
same file copied twice into RESULTS) would write one page twice: that is refused as bad input.
A grid's retried trials are resolved before parsing (``source``).
"""

from __future__ import annotations

import os
import shutil
import time
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from apiflow.errors import UsageError
from apiflow.results.prices import PriceTable
from apiflow.results.source import TrialSource, open_source
from apiflow.viewer.assets import VIEWER_CSS, VIEWER_JS
from apiflow.viewer.conversation import prompt_page
from apiflow.viewer.digest import TrialDigest, digest_trials
from apiflow.viewer.html import esc, page
from apiflow.viewer.index_pages import leaderboard_page, model_page, task_page
from apiflow.viewer.trial_page import render_trial

CHUNK_FILES = 64
MARKER = ".apiflow-viewer"
"""Written into every site: a rebuild may clear a folder that has it, never any other folder."""


@dataclass(frozen=True)
class SiteStats:
    """What one build wrote: trials, pages, bytes, and how long it took."""

    out: Path
    trials: int
    models: int
    tasks: int
    pages: int
    bytes: int
    seconds: float


@dataclass(frozen=True)
class _Rendered:
    digest: TrialDigest
    task_prompt: str  # the user message: shown once per model and task, on the task page
    path: str  # the trial file (named in errors)


def build_site(
    results: str,
    out: Path,
    prices: PriceTable,
    *,
    reprice: bool = False,
    storage_options: dict[str, Any] | None = None,
    workers: int = 0,
    chunk_files: int = CHUNK_FILES,
) -> SiteStats:
    """Write the site for ``results`` into ``out``.

    Args:
        results: a grid's output (folder or ``s3://``), a folder of trial JSONs, or one trial file.
        out: the site folder; must be empty, new, or an earlier viewer site (which is replaced).
        prices: price table for trials that record no cost (all of them with ``reprice``).
        reprice: price every trial from its tokens, ignoring recorded costs.
        storage_options: fsspec options for ``s3://`` results.
        workers: rendering processes (0: all cores; 1: in-process).
        chunk_files: trial files per unit of work.

    Raises:
        UsageError: unreadable results, a file that is not a schema-1.0 trial, or an unusable ``out``.
    """
    start = time.perf_counter()
    source = open_source(results, storage_options)
    _prepare(out)
    by_model: dict[str, list[TrialDigest]] = defaultdict(list)
    seen: dict[tuple[str, str], str] = {}
    task_prompts: dict[tuple[str, str], str] = {}
    for rendered in _render_all(source, out, prices, reprice, workers, chunk_files):
        d = rendered.digest
        if (d.model, d.key) in seen:
            raise UsageError(
                f"{rendered.path} and {seen[(d.model, d.key)]} hold the same trial "
                f"({d.model}, {d.key}): keep one of them"
            )
        seen[(d.model, d.key)] = rendered.path
        by_model[d.model].append(d)
        task_prompts.setdefault((d.model, d.task_id), rendered.task_prompt)
    if not by_model:
        raise UsageError(f"{results}: no schema-1.0 trials among {len(source.paths)} JSON files")
    tasks = _write_indexes(out, by_model, task_prompts, source.url, _price_note(prices, reprice))
    files = [p for p in out.rglob("*") if p.is_file()]
    return SiteStats(
        out=out,
        trials=len(seen),
        models=len(by_model),
        tasks=tasks,
        pages=sum(p.suffix == ".html" for p in files),
        bytes=sum(p.stat().st_size for p in files),
        seconds=time.perf_counter() - start,
    )


def _write_indexes(
    out: Path,
    by_model: dict[str, list[TrialDigest]],
    task_prompts: dict[tuple[str, str], str],
    source: str,
    price_note: str,
) -> int:
    tasks = 0
    for model, digests in by_model.items():
        base = out / digests[0].model_dir
        _write(base / "index.html", model_page(model, digests))
        by_task: dict[str, list[TrialDigest]] = defaultdict(list)
        for d in digests:
            by_task[d.task_id].append(d)
        for task_id, trials in by_task.items():
            _write(
                base / trials[0].task_page, task_page(model, task_id, trials, task_prompts[(model, task_id)])
            )
        tasks += len(by_task)
    _write(out / "index.html", leaderboard_page(by_model, source=source, price_note=price_note))
    return tasks


def _price_note(prices: PriceTable, reprice: bool) -> str:
    if reprice:
        return f"tokens x price table {prices.version}"
    return f"as recorded by the harness, else tokens x price table {prices.version}"


def _prompt_html(text: str) -> str:
    body = f'<pre class="text">{esc(text)}</pre>'
    return page(
        "system prompt", body, depth=1, crumbs=[("../index.html", "leaderboard"), ("", "system prompt")]
    )


def _prepare(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        if not (out / MARKER).is_file():
            raise UsageError(f"--out {out}: folder is not empty and is not an apiflow viewer site")
        for child in out.iterdir():  # an earlier site: replace it whole, so no stale page survives
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("apiflow view\n", encoding="utf-8")
    _write(out / "viewer.js", VIEWER_JS)
    _write(out / "viewer.css", VIEWER_CSS)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _write_shared(path: Path, text: str) -> None:
    # A system prompt page two workers may write at once: same bytes, atomic rename, never torn.
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _render_all(
    source: TrialSource, out: Path, prices: PriceTable, reprice: bool, workers: int, chunk_files: int
) -> Iterator[_Rendered]:
    workers = workers or os.cpu_count() or 1
    chunks = source.read_chunks(chunk_files)
    if workers == 1 or len(source.paths) <= chunk_files:
        for chunk in chunks:
            yield from _render_chunk(chunk, out, prices, reprice)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        pending: list[Future[list[_Rendered]]] = []
        for chunk in chunks:
            pending.append(pool.submit(_render_chunk, chunk, out, prices, reprice))
            if len(pending) >= 2 * workers:  # bounded window: memory stays flat
                yield from pending.pop(0).result()
        for future in pending:
            yield from future.result()


def _render_chunk(
    files: list[tuple[str, bytes]], out: Path, prices: PriceTable, reprice: bool
) -> list[_Rendered]:
    """Parse, classify, render and write one chunk's trial pages (runs in a worker process)."""
    trials, names = [], []
    for path, data in files:
        try:
            trial = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise UsageError(f"{path}: not JSON ({exc})") from None
        if isinstance(trial, dict) and "schema_version" not in trial:
            continue  # a manifest or index beside the trials
        if not isinstance(trial, dict) or trial.get("schema_version") != "1.0":
            raise UsageError(f"{path}: not a schema-1.0 trial (schema_version missing or not '1.0')")
        trials.append(trial)
        names.append(path)
    if not trials:
        return []
    try:
        digests = digest_trials(trials, prices, reprice=reprice)
    except (KeyError, ValueError, TypeError):
        digests = [
            _digest_one(path, trial, prices, reprice) for path, trial in zip(names, trials, strict=True)
        ]
    rendered = []
    for path, trial, digest in zip(names, trials, digests, strict=True):
        html, prompts = render_trial(trial, digest)
        _write(out / digest.model_dir / digest.page, html)
        for name, text in prompts.items():
            if not (out / prompt_page(name)).exists():
                _write_shared(out / prompt_page(name), _prompt_html(text))
        rendered.append(_Rendered(digest, _task_prompt(trial), path))
    return rendered


def _digest_one(path: str, trial: dict[str, Any], prices: PriceTable, reprice: bool) -> TrialDigest:
    # A chunk failed as a whole: find the file to blame.
    try:
        return digest_trials([trial], prices, reprice=reprice)[0]
    except (KeyError, ValueError, TypeError) as exc:
        raise UsageError(f"{path}: not a usable schema-1.0 trial ({type(exc).__name__}: {exc})") from None


def _task_prompt(trial: dict[str, Any]) -> str:
    for message in trial.get("messages") or ():
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
            return str(content or "")
    return ""
