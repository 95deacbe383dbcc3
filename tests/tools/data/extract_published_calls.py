"""Regenerate ``published_tool_calls.json.gz`` from the 42 published fixture transcripts.

Usage: ``python tests/tools/data/extract_published_calls.py /work/shared/fixtures/transcripts``

Keeps, per transcript and in message order, every tool call's name and arguments with the
recorded result (content, error). Source: postmanlabs/apiflow-bench-transcripts (Apache-2.0),
see the README next to this script.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

OUT = Path(__file__).with_name("published_tool_calls.json.gz")


def extract(transcript: dict) -> list[dict]:
    """The tool calls of one transcript with their recorded results, in result order."""
    calls: dict[str, dict] = {}
    out = []
    for message in transcript["messages"]:
        if message["role"] == "assistant":
            for call in message.get("tool_calls") or []:
                calls[call["id"]] = call
        elif message["role"] == "tool":
            call = calls[message["tool_call_id"]]
            out.append(
                {
                    "name": call["name"],
                    "arguments": call["arguments"],
                    "content": message["content"],
                    "error": message.get("error"),
                }
            )
    return out


def main(root: str) -> None:
    """Write the compact fixture file."""
    data = []
    for path in sorted(Path(root).glob("*/*.json")):
        transcript = json.loads(path.read_text())
        data.append({"file": f"{path.parent.name}/{path.name}", "calls": extract(transcript)})
    OUT.write_bytes(gzip.compress(json.dumps(data, ensure_ascii=False).encode(), mtime=0))
    print(f"{len(data)} transcripts, {sum(len(d['calls']) for d in data)} calls -> {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])
