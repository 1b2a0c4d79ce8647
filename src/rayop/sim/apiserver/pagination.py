"""Consistent list pagination: first-page snapshots addressed by opaque continue tokens."""

from __future__ import annotations

import base64
import itertools
from collections import OrderedDict
from typing import Any

import orjson

from rayop.sim.machinery import errors as se

__all__ = ["Snapshots"]

_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. "
    "You can start a new list without the continue parameter."
)


class Snapshots:
    """Keeps the item lists of paginated lists so every page is served at the first page's RV.

    Args:
        capacity: How many snapshots to keep; the oldest is evicted (its tokens then get 410).
    """

    def __init__(self, capacity: int = 64) -> None:
        self._capacity = capacity
        self._ids = itertools.count(1)
        self._snaps: OrderedDict[int, tuple[list[dict[str, Any]], int]] = OrderedDict()

    def page(
        self, items: list[dict[str, Any]], rv: int, limit: int, offset: int = 0, snap_id: int = 0
    ) -> tuple[list[dict[str, Any]], str, int]:
        """Returns ``(page, continue_token, remaining)`` for items[offset:offset+limit]."""
        end = offset + limit
        if limit <= 0 or end >= len(items):
            if snap_id:
                self._snaps.pop(snap_id, None)
            return items[offset:], "", 0
        if not snap_id:
            snap_id = next(self._ids)
            self._snaps[snap_id] = (items, rv)
            while len(self._snaps) > self._capacity:
                self._snaps.popitem(last=False)
        token = base64.urlsafe_b64encode(orjson.dumps({"s": snap_id, "o": end, "rv": rv})).decode()
        return items[offset:end], token, len(items) - end

    def resume(self, token: str) -> tuple[list[dict[str, Any]], int, int, int]:
        """Returns ``(items, rv, offset, snap_id)`` for a continue token.

        Raises:
            StatusError: 410 Expired for an unknown or evicted token, 400 for garbage.
        """
        try:
            data = orjson.loads(base64.urlsafe_b64decode(token.encode()))
            snap_id, offset = int(data["s"]), int(data["o"])
        except (ValueError, KeyError, TypeError, orjson.JSONDecodeError) as exc:
            raise se.bad_request(f"continue key is not valid: {exc}") from exc
        snap = self._snaps.get(snap_id)
        if snap is None:
            raise se.expired(_EXPIRED)
        return snap[0], snap[1], offset, snap_id
