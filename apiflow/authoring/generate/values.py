"""Distinctive values: minted ids and refs no decoy, seed or prompt will ever hold.

A card value proves provenance only if it is unique to the correct live response
(REFERENCE §7), so every minted string is drawn from the generator's seeded stream,
checked against everything minted so far in the world, and shaped like
``<prefix>-<4hex>-<4hex>``. Decoys get visibly different ``<prefix>-legacy-00NN`` values.
"""

from __future__ import annotations

import hashlib
import random


def derive_rng(*parts: object) -> random.Random:
    """A ``random.Random`` derived from content by sha256 (never ``hash()``, never global)."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


class Minter:
    """Unique distinctive values for one world."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._used: set[str] = set()
        self._legacy = 0

    def _hex(self, digits: int) -> str:
        return f"{self._rng.getrandbits(4 * digits):0{digits}x}"

    def _fresh(self, make: object) -> str:
        while True:
            value = make()  # type: ignore[operator]
            if value not in self._used and not any(value in u or u in value for u in self._used):
                self._used.add(value)
                return value

    def id(self, prefix: str) -> str:
        """``<prefix>-<4hex>-<4hex>`` (e.g. ``hv-7c2e-2201``)."""
        return self._fresh(lambda: f"{prefix}-{self._hex(4)}-{self._hex(4)}")

    def ref(self, prefix: str) -> str:
        """A reference canary ``<prefix>-<4hex><2hex>-<3digit>``, shaped unlike ids."""
        return self._fresh(lambda: f"{prefix}-{self._hex(6)}-{self._rng.randrange(100, 999)}")

    def token(self, stem: str) -> str:
        """A bearer token ``tk_<stem>_<6hex>``."""
        return self._fresh(lambda: f"tk_{stem}_{self._hex(6)}")

    def legacy(self, prefix: str) -> str:
        """A recognisably-decoy value ``<prefix>-legacy-00NN``."""
        self._legacy += 1
        value = f"{prefix}-legacy-{self._legacy:04d}"
        self._used.add(value)
        return value

    def number(self, low: float, high: float, decimals: int) -> float | int:
        """A value in [low, high] with ``decimals`` places, never reused in this world."""
        while True:
            value = round(self._rng.uniform(low, high), decimals)
            text = f"{value}"
            if text not in self._used:
                self._used.add(text)
                return int(value) if decimals == 0 else value

    def count(self, low: int, high: int) -> int:
        """An integer count in [low, high], never reused in this world."""
        while True:
            value = self._rng.randint(low, high)
            if f"#{value}" not in self._used:
                self._used.add(f"#{value}")
                return value
