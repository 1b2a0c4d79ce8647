"""Controller sources fed by shared informers: ``for_`` (the object itself) and ``owns``.

Both register an event handler on an informer and turn its events into reconcile requests:

* :func:`for_` enqueues the object's own ``Request(namespace, name)``;
* :func:`owns` enqueues the object's *controlling* owner: the owner reference with
  ``controller: true`` whose kind and API group match (on updates, old and new owners both).

Priorities follow controller-runtime (the ``LowPriority`` of its ``pkg/handler`` event handlers):
creates delivered as part of the initial list and resyncs (updates whose old and new resourceVersion
are equal) get :data:`LOW_PRIORITY`; every other event gets 0. Predicates must all pass for an event
to enqueue. A source reports synced once its handler has received the informer's initial list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from rayop.apimachinery.objects import ObjView as Obj
from rayop.runtime.informers.indexer import resource_version
from rayop.runtime.informers.shared_informer import EventHandler
from rayop.runtime.predicate import Predicate
from rayop.runtime.reconcile import Request
from rayop.runtime.source import Enqueue, Source

LOW_PRIORITY = -100
"""controller-runtime's ``handler.LowPriority``."""


class _Registration(Protocol):
    def has_synced(self) -> bool: ...


class InformerLike(Protocol):
    """What a source needs from an informer (SharedInformer and MultiNamespaceInformer)."""

    def add_event_handler(self, handler: EventHandler) -> Any: ...

    def start(self) -> None: ...


MapFunc = Callable[[Obj], Iterable[Request]]
"""Maps a changed object to the requests to enqueue."""


def own_request(obj: Obj) -> list[Request]:
    """Maps an object to its own request."""
    meta = obj.get("metadata") or {}
    return [Request(meta.get("namespace") or "", meta.get("name", ""))]


def controller_owner_mapper(owner_kind: str, owner_api_group: str) -> MapFunc:
    """Returns a mapper from an object to the request of its controlling owner of that kind."""

    def mapper(obj: Obj) -> list[Request]:
        meta = obj.get("metadata") or {}
        for ref in meta.get("ownerReferences") or ():
            if not ref.get("controller") or ref.get("kind") != owner_kind:
                continue
            api_version = str(ref.get("apiVersion", ""))
            group = api_version.rpartition("/")[0]
            if group == owner_api_group:
                return [Request(meta.get("namespace") or "", ref.get("name", ""))]
        return []

    return mapper


class InformerSource:
    """A :class:`~rayop.runtime.source.Source` mapping an informer's events to requests."""

    def __init__(
        self, informer: InformerLike, mapper: MapFunc, predicates: Iterable[Predicate] = ()
    ) -> None:
        self.informer = informer
        self._mapper = mapper
        self._predicates = tuple(predicates)
        self._enqueue: Enqueue | None = None
        self._registration: _Registration | None = None

    def start(self, enqueue: Enqueue) -> None:
        """Registers with the informer (starting it if needed); never blocks.

        Raises:
            RuntimeError: the source was already started.
        """
        if self._registration is not None:
            raise RuntimeError("source already started")
        self._enqueue = enqueue
        self._registration = self.informer.add_event_handler(self)
        self.informer.start()

    def has_synced(self) -> bool:
        """Tells whether the informer's initial list has been turned into requests."""
        return self._registration is not None and self._registration.has_synced()

    def _emit(self, objs: Iterable[Obj], priority: int) -> None:
        assert self._enqueue is not None
        seen: set[Request] = set()
        for obj in objs:
            for request in self._mapper(obj):
                if request not in seen:
                    seen.add(request)
                    self._enqueue(request, priority)

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        if all(p.create(obj) for p in self._predicates):
            self._emit((obj,), LOW_PRIORITY if is_in_initial_list else 0)

    def on_update(self, old: Obj, new: Obj) -> None:
        if all(p.update(old, new) for p in self._predicates):
            resync = resource_version(old) == resource_version(new)
            self._emit((old, new), LOW_PRIORITY if resync else 0)

    def on_delete(self, obj: Obj) -> None:
        if all(p.delete(obj) for p in self._predicates):
            self._emit((obj,), 0)


class _OwnRequestSource(InformerSource):
    def on_update(self, old: Obj, new: Obj) -> None:
        if all(p.update(old, new) for p in self._predicates):
            resync = resource_version(old) == resource_version(new)
            self._emit((new,), LOW_PRIORITY if resync else 0)


def for_(informer: InformerLike, *predicates: Predicate) -> InformerSource:
    """Returns a source enqueuing each changed object's own request (controller-runtime For)."""
    return _OwnRequestSource(informer, own_request, predicates)


def owns(
    informer: InformerLike, owner_kind: str, owner_api_group: str, *predicates: Predicate
) -> InformerSource:
    """Returns a source enqueuing the controlling owner (``controller: true``) of each object.

    Args:
        informer: The informer of the owned kind (e.g. pods).
        owner_kind: The owner's kind, e.g. ``"Deployment"``.
        owner_api_group: The owner's API group, e.g. ``"apps"`` ("" for the core group).
        *predicates: Filters the owned objects' events.
    """
    return InformerSource(
        informer, controller_owner_mapper(owner_kind, owner_api_group), predicates
    )


def watches(informer: InformerLike, mapper: MapFunc, *predicates: Predicate) -> InformerSource:
    """Returns a source enqueuing whatever ``mapper`` maps each changed object to."""
    return InformerSource(informer, mapper, predicates)


_: type[Source] = InformerSource
