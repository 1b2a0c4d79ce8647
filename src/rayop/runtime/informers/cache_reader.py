"""The read side of an informer's cache, as the reconcilers see it.

:class:`CacheReader` is what a reconciler is given instead of an informer: it reads cached
objects and never blocks or writes. Every informer the manager hands out
(:class:`~rayop.runtime.informers.shared_informer.SharedInformer` and
:class:`~rayop.runtime.informers.factory.MultiNamespaceInformer`) satisfies it, and so does the
fake cache of :mod:`rayop.testing`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

__all__ = ["CacheReader"]


class CacheReader(Protocol):
    """Reads cached objects of one resource; never blocks."""

    def get(self, namespace: str | None, name: str) -> Mapping[str, Any] | None:
        """Returns the cached object ``namespace/name`` (None: not cached)."""
        ...

    def list(
        self, namespace: str | None = None, *, label_selector: Any = None
    ) -> Sequence[Mapping[str, Any]]:
        """Returns the cached objects in ``namespace`` (all if None) matching the selector."""
        ...
