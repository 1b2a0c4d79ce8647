"""A fake API client for unit tests of a pass: :class:`FakeClient`.

It keeps objects in memory per resource (by group and plural), answers as an API server would
in the ways a pass notices (a new ``resourceVersion`` on every write, a ``uid`` and a name from
``generateName`` on create, 404 ``NotFound`` and 409 ``AlreadyExists`` with ``metav1.Status``
bodies, a delete that only marks an object with finalizers and a 409 ``Conflict`` when its
preconditions fail), records every call, raises an error a test queued for the next call of a
verb (or for every call of it), and can feed the writes of a resource to a
:class:`~rayop.testing.fake_cache.FakeCache` as a watch would. It speaks the verbs of :class:`rayop.kube.client.KubeClient` that the
controllers use, with the same signatures, so it stands in for it wherever a controller's
dependencies take a client protocol.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Unpack

from rayop.kube.errors import AlreadyExists, ApiError, Conflict, NotFound
from rayop.kube.options import DeleteOptions, delete_body
from rayop.kube.resource import Resource
from rayop.testing.fake_cache import FakeCache

__all__ = ["READ_VERBS", "Call", "FakeClient", "api_error"]

READ_VERBS = frozenset({"get", "list"})
"""The verbs that change nothing; every other verb is a write."""

DELETED_AT = "2026-01-01T00:00:00Z"
"""The ``deletionTimestamp`` a delete gives an object that has finalizers."""


@dataclass(frozen=True, slots=True)
class Call:
    """One call the fake client received.

    Attributes:
        verb: ``get``, ``list``, ``create``, ``update``, ``update/status``, ``patch`` or
            ``delete``.
        resource: The resource's plural (``pods``, ``rayclusters``).
        kind: The resource's kind (``Pod``, ``RayCluster``).
        namespace: The namespace ("" for cluster-scoped objects and lists of all).
        name: The object's name ("" for a list).
        body: What was sent (a deep copy), or None.
        propagation_policy: A delete's propagation policy.
    """

    verb: str
    resource: str
    kind: str
    namespace: str
    name: str
    body: Any = None
    propagation_policy: str | None = None


def api_error(cls: type[ApiError], code: int, reason: str, message: str) -> ApiError:
    """Returns the error ``cls`` as the API server's ``metav1.Status`` body raises it."""
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure"}
    return cls({**status, "code": code, "reason": reason, "message": message})


def _namespace_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def _key(res: Resource, namespace: str, name: str) -> tuple[str, str, str, str]:
    return (res.group, res.plural, namespace, name)


class FakeClient:
    """An in-memory API client (see the module docstring).

    Attributes:
        calls: Every call, in order.
    """

    def __init__(self) -> None:
        self._objects: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        self.calls: list[Call] = []
        self._failures: dict[tuple[str, str | None], list[Exception]] = {}
        self._always: dict[tuple[str, str | None], Exception] = {}
        self._feeds: dict[tuple[str, str], FakeCache] = {}
        self._versions = itertools.count(101)
        self._uids = itertools.count(1)
        self._names = itertools.count(1)

    # -- arranging and inspecting -------------------------------------------------------------

    def put(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Stores ``obj`` as the server's copy (a new resourceVersion, a uid if it has none)
        without recording a call; returns a copy of what is stored."""
        stored = copy.deepcopy(dict(obj))
        meta = stored.setdefault("metadata", {})
        meta["resourceVersion"] = str(next(self._versions))
        meta.setdefault("uid", f"uid-{next(self._uids)}")
        self._objects[_key(res, str(meta.get("namespace") or ""), str(meta["name"]))] = stored
        return copy.deepcopy(stored)

    def stored(self, res: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        """Returns a copy of the stored object, or None."""
        found = self._objects.get(_key(res, namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def stored_all(self, res: Resource) -> list[dict[str, Any]]:
        """Returns copies of every stored object of ``res``, in insertion order."""
        return [
            copy.deepcopy(o)
            for (group, plural, _, _), o in self._objects.items()
            if (group, plural) == (res.group, res.plural)
        ]

    def feed(self, res: Resource, cache: FakeCache | None) -> None:
        """Makes every write of ``res`` that this client stores reach ``cache`` at once, as a
        watch without lag would (a delete removes the object there); None stops it, so the
        cache lags behind the writes until the test puts them in."""
        if cache is None:
            self._feeds.pop((res.group, res.plural), None)
        else:
            self._feeds[(res.group, res.plural)] = cache

    def fail_next(self, verb: str, error: Exception, *, kind: str | None = None) -> None:
        """Makes the next call of ``verb`` (of ``kind``, or of any kind) raise ``error``."""
        self._failures.setdefault((verb, kind), []).append(error)

    def fail_every(self, verb: str, error: Exception | None, *, kind: str | None = None) -> None:
        """Makes every call of ``verb`` (of ``kind``, or of any kind) from now on raise
        ``error``, as a server that keeps refusing; None makes them answer again. A failure
        queued with :meth:`fail_next` comes first."""
        if error is None:
            self._always.pop((verb, kind), None)
        else:
            self._always[(verb, kind)] = error

    def calls_of(self, verb: str, kind: str | None = None) -> list[Call]:
        """Returns the calls of ``verb`` (of ``kind``, or of every kind), in order."""
        return [c for c in self.calls if c.verb == verb and kind in (None, c.kind)]

    def verbs(self, kind: str | None = None) -> list[str]:
        """Returns the verb of each call (of ``kind``, or of every kind), in order."""
        return [c.verb for c in self.calls if kind in (None, c.kind)]

    def writes(self, kind: str | None = None) -> list[Call]:
        """Returns the calls (of ``kind``, or of every kind) whose verb is not a read, in
        order, whether they succeeded or not."""
        return [c for c in self.calls if c.verb not in READ_VERBS and kind in (None, c.kind)]

    def _store(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        stored = self.put(res, obj)
        cache = self._feeds.get((res.group, res.plural))
        if cache is not None:
            cache.put(stored)
        return stored

    def _record(self, call: Call) -> None:
        self.calls.append(call)
        for key in ((call.verb, call.kind), (call.verb, None)):
            queued = self._failures.get(key)
            if queued:
                raise queued.pop(0)
        for key in ((call.verb, call.kind), (call.verb, None)):
            if key in self._always:
                raise self._always[key]

    def _not_found(self, res: Resource, name: str) -> ApiError:
        return api_error(NotFound, 404, "NotFound", f'{res.plural} "{name}" not found')

    # -- the verbs ----------------------------------------------------------------------------

    async def get(
        self, res: Resource, name: str, *, namespace: str | None = None
    ) -> dict[str, Any]:
        """Returns the stored object.

        Raises:
            NotFound: none is stored.
        """
        self._record(Call("get", res.plural, res.kind, namespace or "", name))
        found = self.stored(res, namespace or "", name)
        if found is None:
            raise self._not_found(res, name)
        return found

    async def list(self, res: Resource, *, namespace: str | None = None) -> list[dict[str, Any]]:
        """Returns the stored objects of ``res`` in ``namespace`` (all when None)."""
        self._record(Call("list", res.plural, res.kind, namespace or "", ""))
        return [o for o in self.stored_all(res) if namespace in (None, _namespace_of(o))]

    async def create(
        self, res: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        """Stores a new object; a ``generateName`` gets a name. The call records the body as
        sent and the name the object got.

        Raises:
            AlreadyExists: an object of that name is stored.
        """
        sent = copy.deepcopy(dict(obj))
        body = copy.deepcopy(sent)
        meta = body.setdefault("metadata", {})
        meta["namespace"] = namespace or meta.get("namespace") or ""
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = f"{meta['generateName']}{next(self._names):05d}"
        name = str(meta.get("name") or "")
        self._record(Call("create", res.plural, res.kind, meta["namespace"], name, sent))
        if _key(res, meta["namespace"], name) in self._objects:
            message = f'{res.plural} "{name}" already exists'
            raise api_error(AlreadyExists, 409, "AlreadyExists", message)
        return self._store(res, body)

    async def update(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Replaces the stored object (stores it when absent)."""
        return self._write("update", res, obj)

    async def update_status(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Replaces the stored object's status (stores it when absent)."""
        return self._write("update/status", res, obj)

    def _write(self, verb: str, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        body = copy.deepcopy(dict(obj))
        meta = body.get("metadata") or {}
        namespace, name = _namespace_of(body), str(meta.get("name") or "")
        self._record(Call(verb, res.plural, res.kind, namespace, name, body))
        return self._store(res, body)

    async def patch(
                    self, res: Resource, name: str, body: Any, *, namespace: str | None = None) -> dict[str, Any]:
        """Merges ``body``'s ``metadata`` (labels, annotations, finalizers...) and ``status``
        into the stored object.

        Raises:
            NotFound: none is stored.
        """
        self._record(
            Call("patch", res.plural, res.kind, namespace or "", name, copy.deepcopy(body))
        )
        stored = self.stored(res, namespace or "", name)
        if stored is None:
            raise self._not_found(res, name)
        for part in ("metadata", "status"):
            changes = {k: v for k, v in (body.get(part) or {}).items() if k != "resourceVersion"}
            stored.setdefault(part, {}).update(changes)
        return self._store(res, stored)

    async def delete(self, res: Resource, name: str, *, namespace: str | None = None,
                     **options: Unpack[DeleteOptions]) -> dict[str, Any]:
        """Deletes the stored object, or marks it deleted while it has finalizers. The call's
        body is the ``DeleteOptions`` body the options make (None when they ask for nothing).

        Raises:
            NotFound: none is stored.
            Conflict: a precondition (``uid``, ``resourceVersion``) does not hold.
        """
        call = Call(
            "delete", res.plural, res.kind, namespace or "", name, delete_body(options),
            propagation_policy=options.get("propagation_policy"),
        )  # fmt: skip
        self._record(call)
        key = _key(res, namespace or "", name)
        found = self._objects.get(key)
        if found is None:
            raise self._not_found(res, name)
        for field, wanted in (options.get("preconditions") or {}).items():
            if found["metadata"].get(field) != wanted:
                message = f'{res.plural} "{name}": precondition failed: {field} is not {wanted}'
                raise api_error(Conflict, 409, "Conflict", message)
        cache = self._feeds.get((res.group, res.plural))
        if found["metadata"].get("finalizers"):
            found["metadata"].setdefault("deletionTimestamp", DELETED_AT)
            if cache is not None:
                cache.put(found)
            return copy.deepcopy(found)
        if cache is not None:
            cache.remove(namespace or "", name)
        return self._objects.pop(key)
