"""Consistent hashing of object keys onto replicas: :class:`HashRing`.

Each member is placed on a 64-bit ring at ``vnodes`` points (the first 8 bytes of
``sha256("<member>#<i>")``); a key belongs to the member whose point follows the key's own
hash (``sha256(key)``) clockwise. Everything is deterministic, so every replica and every
leader computes the same owner from the same members. Adding a member moves only the keys
that land on its new points; removing one moves only its own keys (Karger et al., "Consistent
hashing and random trees", STOC 1997, https://doi.org/10.1145/258533.258660).
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterable

DEFAULT_VNODES = 1024
"""Points per member. With 2 to 10 members of random names and 30,000 keys, the share furthest
from its mean was off by 6 % in the median of 30 name sets and by 9 % at most (3 members: the
largest share 34.0 % in the median, 36.4 % at most); at 160 points it was off by up to 26 %
(3 members: 35.4 %, 40.5 %). The largest share sets a replica's memory. Building a ring takes
about 3 ms for 3 members and 20 ms for 10, once per change of the members."""


def ring_hash(text: str) -> int:
    """Returns the 64-bit position of ``text`` on the ring."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


class HashRing:
    """An immutable ring over a set of members (replica ids)."""

    def __init__(self, members: Iterable[str], *, vnodes: int = DEFAULT_VNODES) -> None:
        if vnodes < 1:
            raise ValueError("vnodes must be at least 1")
        self.members = frozenset(members)
        points = sorted(
            (ring_hash(f"{member}#{i}"), member) for member in self.members for i in range(vnodes)
        )
        self._positions = [position for position, _ in points]
        self._owners = [member for _, member in points]

    def owner(self, key: str) -> str | None:
        """Returns the member ``key`` belongs to, or None on an empty ring."""
        if not self._positions:
            return None
        index = bisect.bisect_right(self._positions, ring_hash(key))
        return self._owners[index % len(self._owners)]
