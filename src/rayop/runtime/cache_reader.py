"""The read side of an informer's cache, as the reconcilers see it.

:class:`CacheReader` is what a reconciler is given instead of an informer: it reads cached
objects and never blocks or writes. Every informer the manager hands out
(:class:`~rayop.runtime.informer.SharedInformer` and
:class:`~rayop.runtime.informer_factory.MultiNamespaceInformer`) satisfies it, and so does the
fake cache of :mod:`rayop.testing`.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["CacheReader"]


class CacheReader(Protocol):
    """Reads cached objects of one resource; never blocks."""

    def get(self, namespace: str | None, name: str) -> Mapping[str, Any] | None:
        """Returns the cached object ``namespace/name`` (None: not cached)."""
        ...

    def list(
        self, namespace: str | None = None, *, label_selector: Any = None
    ) -> builtins.list[Mapping[str, Any]]:
        """Returns the cached objects in ``namespace`` (all if None) matching the selector."""
        ...
