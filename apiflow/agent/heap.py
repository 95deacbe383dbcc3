"""Keep a long run's loaded state out of the cyclic garbage collector's walks.

A process that plays many trials first loads what they all read (the bank: about a hundred
thousand objects; litellm's modules when a provider is used). Left as they are, those objects are
walked by every full collection, which the trials' own garbage sets off now and then: over 2,850
calibrated ``bank/v1`` trials in one process the collector took 0.20 ms a trial and paused up to
0.2 s, and 0.05-0.08 ms a trial with pauses of 20-35 ms once the loaded heap was frozen (docs/design/030,
"Round four, together"). ``gc.freeze`` moves what exists now to
the permanent generation: it is still freed by reference counting, only cycles among it wait for
``gc.unfreeze``, and what trials create is collected as before.
"""

from __future__ import annotations

import gc


def settle_loaded() -> None:
    """Collect once, then freeze every object alive now (call after loading, before the trials)."""
    gc.collect()
    gc.freeze()
