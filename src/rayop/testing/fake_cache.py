"""A fake informer cache for unit tests of a pass: :class:`FakeCache`.

It satisfies :class:`rayop.runtime.informers.cache_reader.CacheReader`, which is all a reconciler reads
a cache through, and matches label selectors as the informer does (equality, set-based and
existence requirements, in the string or the mapping form).
"""

from __future__ import annotations

import builtins
import copy
from collections.abc import Mapping
from typing import Any

from rayop.apimachinery.labels import as_label_selector

__all__ = ["FakeCache"]


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class FakeCache:
    """The read side of an informer cache over objects a test puts in it.

    Args:
        objs: Objects to hold from the start.
    """

    def __init__(self, *objs: Mapping[str, Any]) -> None:
        self._objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.put(*objs)

    def put(self, *objs: Mapping[str, Any]) -> None:
        """Holds copies of ``objs`` (replacing any of the same namespace and name)."""
        for obj in objs:
            stored = copy.deepcopy(dict(obj))
            self._objects[_key(stored)] = stored

    def remove(self, namespace: str, name: str) -> None:
        """Drops the object ``namespace/name``, if held."""
        self._objects.pop((namespace, name), None)

    def clear(self) -> None:
        """Drops every object held (as a cache whose objects were all deleted)."""
        self._objects.clear()

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        """Returns the held object ``namespace/name``, or None."""
        return self._objects.get((namespace or "", name))

    def list(
        self, namespace: str | None = None, *, label_selector: Any = None
    ) -> builtins.list[dict[str, Any]]:
        """Returns the held objects in ``namespace`` (all when None) matching the selector."""
        selector = as_label_selector(label_selector) if label_selector is not None else None
        return [
            obj
            for (ns, _), obj in self._objects.items()
            if namespace in (None, ns)
            and (
                selector is None
                or selector.matches((obj.get("metadata") or {}).get("labels") or {})
            )
        ]

    def has_synced(self) -> bool:
        """A fake cache holds what the test put in it from the start: it is always synced."""
        return True

    async def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Returns at once (see :meth:`has_synced`)."""
        return True

    def __len__(self) -> int:
        return len(self._objects)
