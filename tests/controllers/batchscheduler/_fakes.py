"""An in-memory API for the batch scheduler tests: objects by (resource, namespace, name)."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping
from typing import Any

from rayop.kube.errors import AlreadyExists, ApiError, NotFound
from rayop.kube.resource import Resource

Obj = dict[str, Any]
_STATUS = {"kind": "Status", "apiVersion": "v1"}


def _error(cls: type[ApiError], code: int, message: str) -> ApiError:
    return cls({**_STATUS, "code": code, "message": message, "reason": cls.__name__})


class FakeApi:
    """Stores what is created; counts every write, so tests see what the scheduler did."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self.writes: list[tuple[str, str, str]] = []
        self._uids = itertools.count(1)

    def key(self, res: Resource, name: str, namespace: str | None) -> tuple[str, str, str]:
        """The store key of an object."""
        return (res.plural + "." + res.group, namespace or "", name)

    def put(self, res: Resource, obj: Obj) -> Obj:
        """Stores an object as a user would create it (a uid is given when missing)."""
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", f"uid-{next(self._uids)}")
        self.objects[self.key(res, meta["name"], meta.get("namespace"))] = copy.deepcopy(obj)
        return obj

    def stored(self, res: Resource, name: str, namespace: str) -> Obj | None:
        """The stored object, or None."""
        return self.objects.get(self.key(res, name, namespace))

    async def get(self, res: Resource, name: str, *, namespace: str | None = None) -> Obj:
        found = self.objects.get(self.key(res, name, namespace))
        if found is None:
            raise _error(NotFound, 404, f'{res.plural} "{name}" not found')
        return copy.deepcopy(found)

    async def create(
        self, res: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> Obj:
        name = obj["metadata"]["name"]
        if self.key(res, name, namespace) in self.objects:
            raise _error(AlreadyExists, 409, f'{res.plural} "{name}" already exists')
        self.writes.append(("create", res.kind, name))
        body = copy.deepcopy(dict(obj))
        body["metadata"]["namespace"] = namespace
        return self.put(res, body)

    async def update(self, res: Resource, obj: Mapping[str, Any]) -> Obj:
        meta = obj["metadata"]
        self.writes.append(("update", res.kind, meta["name"]))
        self.objects[self.key(res, meta["name"], meta.get("namespace"))] = copy.deepcopy(dict(obj))
        return dict(obj)

    async def delete(
        self, res: Resource, name: str, *, namespace: str | None = None, **options: Any
    ) -> Obj:
        del options
        key = self.key(res, name, namespace)
        if key not in self.objects:
            raise _error(NotFound, 404, f'{res.plural} "{name}" not found')
        self.writes.append(("delete", res.kind, name))
        obj = self.objects[key]
        if obj["metadata"].get("finalizers"):
            obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
            return obj
        return self.objects.pop(key)
