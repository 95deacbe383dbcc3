"""Keep a long run's loaded state out of the cyclic garbage collector's walks.

A process that plays many trials first loads what they all read (the bank: about a hundred
thousand objects; litellm's modules when a provider is used). Left as they are, those objects are
walked by every full collection, which the trials' own garbage sets off now and then; frozen, the
collector's share of a trial and its longest pauses fall several-fold (measured in
docs/results/030-agent-loop-rounds.md, "Round four, together"). ``gc.freeze`` moves what exists now to
the permanent generation: it is still freed by reference counting, only cycles among it wait for
``gc.unfreeze``, and what trials create is collected as before.

Then the young generation is collected after ``YOUNG_COLLECTION_AFTER`` net new objects instead of 700:
nearly everything a trial makes is freed by reference counting when the trial ends, so what a young
collection finds is the trial in flight and the few objects the run keeps (replayed world answers,
per-task caches); at 700 it ran about every other trial and promoted the trial in flight to the older
generations, whose collections then walked it again.
"""

from __future__ import annotations

import gc
from typing import Final

YOUNG_COLLECTION_AFTER: Final = 100_000
"""Net new tracked objects between young collections (CPython: 700). Chosen from calibrated
``bank/v1`` grid trials in one process (``gc.callbacks``), where the collector's time fell with each
step from 700 through 10,000 to 100,000 (docs/results/030-agent-loop-rounds.md, "Round six"). Cycles wait longer to be
freed: at most this many objects (tens of MB) of them."""


def settle_loaded() -> None:
    """Collect once, freeze every object alive now, and collect the young generation less often
    (call after loading, before the trials)."""
    gc.collect()
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_AFTER, middle, oldest)
