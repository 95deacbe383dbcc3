"""The stand-in's rate limits: the provider's own RPM/TPM buckets, and how long a hung request hangs.

Apart from the answering code (``standin_provider``) because a limit is a clock and a bucket, not
a reply: it can be read and tested knowing nothing of the wires.
"""

from __future__ import annotations

import threading
import time


class Hang(float):
    """Seconds a hung request waits before its connection is dropped (it is never answered)."""


class Limiter:
    """Server-side RPM/TPM buckets (the provider's view of the limit)."""

    def __init__(self, rpm: float | None, tpm: float | None, burst_s: float) -> None:
        now = time.monotonic()
        self.buckets = [
            [rate / 60.0, max(1.0, rate / 60.0 * burst_s), max(1.0, rate / 60.0 * burst_s), now]
            for rate in (rpm, tpm)
            if rate
        ]
        self.kinds = [k for k, rate in (("requests", rpm), ("tokens", tpm)) if rate]
        self.lock = threading.Lock()

    def admit(self, tokens: float) -> tuple[float, str] | None:
        """None when admitted, else seconds until the request would fit and the limit that binds
        (``requests`` or ``tokens``: the 429's message names it, as OpenAI's do)."""
        with self.lock:
            now = time.monotonic()
            waits = []
            for bucket, kind in zip(self.buckets, self.kinds, strict=True):
                rate, cap, level, stamp = bucket
                level = min(cap, level + (now - stamp) * rate)
                bucket[2], bucket[3] = level, now
                need = 1.0 if kind == "requests" else min(tokens, cap)
                if level < need:
                    waits.append(((need - level) / rate, kind))
            if waits:
                return max(waits)
            for bucket, kind in zip(self.buckets, self.kinds, strict=True):
                bucket[2] -= 1.0 if kind == "requests" else min(tokens, bucket[1])
            return None
