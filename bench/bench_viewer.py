"""Viewer build time and site size (issue 12 §4). One command:

    .venv/bin/python bench/bench_viewer.py RESULTS [--workers N]

RESULTS is a local grid output (``apiflow grid run``) or a folder of trial JSONs. Measures, in the
same run and on the same trial files:

* baseline: ``transcripts ingest`` of them (read + parse + flatten to Parquet, same worker count):
  the least any tool that looks at every transcript must spend;
* ``apiflow view``: listing, parsing, classifying, pricing and rendering every page;

and prints trials, seconds of each, the ratio view / ingest, the transcripts' bytes against the
site's, the largest page, and the peak RSS of this process and its workers.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from apiflow.analysis.ingest import ingest  # noqa: E402
from apiflow.results.prices import load_price_table  # noqa: E402
from apiflow.results.source import open_source  # noqa: E402
from apiflow.viewer import build_site  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="local grid output or folder of trial JSONs")
    parser.add_argument(
        "--workers", type=int, default=0, help="processes for both phases (default: all cores)"
    )
    args = parser.parse_args()
    source = open_source(args.results)
    with tempfile.TemporaryDirectory(prefix="bench-viewer-") as work:
        # The baseline (ingest) reads trial files: a grid's archived transcripts are unpacked for it
        # first, untimed; the viewer reads the archives themselves.
        files, transcript_bytes = [], 0
        for chunk in source.read_chunks(256):
            for path, body in chunk:
                transcript_bytes += len(body)
                if path in source.members:
                    path = str(Path(work) / "unpacked" / f"{len(files):08d}.json")
                    Path(path).parent.mkdir(exist_ok=True)
                    Path(path).write_bytes(body)
                files.append(path)
        start = time.perf_counter()
        ingested = ingest(files, Path(work) / "trials.parquet", workers=args.workers)
        baseline = time.perf_counter() - start
        site = build_site(args.results, Path(work) / "site", load_price_table(), workers=args.workers)
        pages = [p for p in site.out.rglob("*.html")]
        largest = max(pages, key=lambda p: p.stat().st_size)
        largest_bytes = largest.stat().st_size
    rss = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    with open("/proc/loadavg") as handle:
        load = handle.read().split()[0]
    print(f"{args.results}: {site.trials:,} trials ({ingested.rows:,} ingested), load avg {load}")
    print(f"  baseline transcripts ingest: {baseline:7.1f} s")
    print(
        f"  apiflow view:                {site.seconds:7.1f} s  ({site.seconds / baseline:.1f}x the ingest)"
    )
    print(
        f"  transcripts {transcript_bytes / 1e6:,.1f} MB -> site {site.bytes / 1e6:,.1f} MB "
        f"({site.bytes / transcript_bytes:.2f}x), {site.pages:,} pages, largest {largest_bytes / 1e3:,.0f} KB "
        f"({largest.relative_to(site.out).parts[0]}/…/{largest.name})"
    )
    print(f"  peak RSS (largest process) {rss / 1024:,.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
