"""The object store of the embedded API server: the class to instantiate, and deletion.

Reads, the change feed and watches live in :mod:`rayop.sim.storage.state`, create and update in
:mod:`rayop.sim.storage.writes`; this module adds kube-apiserver's deletion semantics:
propagation policies (finalizers for the garbage collector), preconditions, finalizers and
deletionTimestamp, graceful pod deletion finished by the kubelet, namespace and CRD cleanup.
Stored objects are never mutated in place; public methods copy in and out unless called with
``copy=False``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from rayop.sim.machinery import errors as se
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.storage.state import (
    CRD_KEY,
    NS_KEY,
    Expired,
    Obj,
    Persistence,
    Subscriber,
    clone,
    timestamp,
)
from rayop.sim.storage.writes import StoreWrites

__all__ = ["Expired", "Persistence", "Store", "Subscriber", "clone"]


class Store(StoreWrites):
    """In-memory objects with a global resourceVersion, watch history and a change feed.

    See :class:`~rayop.sim.storage.state.StoreCore` for the constructor arguments, reads
    (get, list, peek), ``subscribe`` and watches (``open_watch``, ``watch``), and
    :class:`~rayop.sim.storage.writes.StoreWrites` for ``create`` and ``update``.
    """

    # ----------------------------------------------------------------- delete
    async def delete(
        self,
        info: ResourceInfo,
        namespace: str | None,
        name: str,
        *,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, Any] | None = None,
        dry_run: bool = False,
        copy: bool = True,
    ) -> Obj:
        """Deletes an object, or marks it deleting (finalizers, Foreground/Orphan, graceful pods).

        Returns the object: its final state (gone) or its deleting state (still present).

        Raises:
            StatusError: 404, 409 on a failed precondition, 400 for a bad policy.
        """
        alias = self._alias(info)
        if alias is not None:
            gone = await self.delete(
                alias[0],
                namespace,
                name,
                propagation_policy=propagation_policy,
                grace_period_seconds=grace_period_seconds,
                preconditions=preconditions,
                dry_run=dry_run,
                copy=copy,
            )
            return alias[2](gone)
        ns = (namespace or "") if info.namespaced else ""
        old = self._find(info, ns, name)
        if old is None:
            raise self._not_found(info, name)
        old_meta = old["metadata"]
        self._check_preconditions(info, old_meta, preconditions)
        if propagation_policy not in (None, "Background", "Foreground", "Orphan"):
            raise se.bad_request(f"unsupported propagationPolicy {propagation_policy!r}")
        finalizers = list(old_meta.get("finalizers") or ())
        extra = {"Foreground": "foregroundDeletion", "Orphan": "orphan"}.get(
            propagation_policy or ""
        )
        if extra and extra not in finalizers and not old_meta.get("deletionTimestamp"):
            finalizers.append(extra)
        grace = self._grace_period(info, old, grace_period_seconds)
        if info.key == NS_KEY:
            return await self._delete_namespace(info, old, dry_run=dry_run, copy=copy)
        if not finalizers and grace == 0:
            if dry_run:
                return self._out(info, old, copy)
            stored = self._commit(info, "DELETED", ns, name, old, old)
            self._after_delete(info, stored)
            return self._out(info, stored, copy)
        new = dict(old)
        meta = new["metadata"] = dict(old_meta)
        if finalizers:
            meta["finalizers"] = finalizers
        if not meta.get("deletionTimestamp"):
            meta["deletionTimestamp"] = timestamp(self._wall() + grace)
            meta["deletionGracePeriodSeconds"] = grace
            if "generation" in meta:
                meta["generation"] += 1
        elif grace < (meta.get("deletionGracePeriodSeconds") or 0):
            meta["deletionGracePeriodSeconds"] = grace
        return self._finish_write(info, ns, name, new, old, dry_run=dry_run, copy=copy)

    def _grace_period(self, info: ResourceInfo, obj: Obj, requested: int | None) -> int:
        if info.key != "/pods" or not self.graceful_pod_deletion:
            return 0
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
            return 0
        if requested is not None:
            return max(0, int(requested))
        return int(spec.get("terminationGracePeriodSeconds", 30))

    def _check_preconditions(
        self, info: ResourceInfo, meta: Obj, preconditions: Mapping[str, Any] | None
    ) -> None:
        if not preconditions:
            return
        for field, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
            want = preconditions.get(field)
            if want and want != meta.get(field):
                raise se.conflict(
                    info.plural,
                    info.group,
                    meta["name"],
                    f"Precondition failed: {label} in precondition: {want}, "
                    f"{label} in object meta: {meta.get(field)}",
                )

    async def finalize_delete(self, info: ResourceInfo, namespace: str | None, name: str) -> bool:
        """Removes an object that is being deleted once it has no finalizers (kubelet/GC hook).

        Returns True when the object is gone (or was already), False when finalizers keep it;
        then its grace period is set to 0 so that removing the last finalizer deletes it.
        """
        ns = (namespace or "") if info.namespaced else ""
        old = self._find(info, ns, name)
        if old is None:
            return True
        meta = old["metadata"]
        if meta.get("finalizers"):
            if meta.get("deletionGracePeriodSeconds"):
                new = dict(old)
                new["metadata"] = dict(meta, deletionGracePeriodSeconds=0)
                self._commit(info, "MODIFIED", ns, name, new, old)
            return False
        stored = self._commit(info, "DELETED", ns, name, old, old)
        self._after_delete(info, stored)
        return True

    def _after_delete(self, info: ResourceInfo, obj: Obj) -> None:
        if info.key == CRD_KEY:
            self._drop_crd(obj)
        ns = obj["metadata"].get("namespace")
        if ns and info.namespaced:
            ns_obj = self._objects.get(NS_KEY, {}).get("", {}).get(ns)
            if ns_obj is not None and ns_obj["metadata"].get("deletionTimestamp"):
                self._maybe_finish_namespace(ns_obj)

    def _drop_crd(self, crd: Obj) -> None:
        name = crd["metadata"]["name"]
        infos = self.resources.crd_infos(name)
        for info in infos[:1]:
            for obj in list(self.iter_objects(info)):
                m = obj["metadata"]
                self._commit(info, "DELETED", m.get("namespace", ""), m["name"], obj, obj)
        self.resources.unregister_crd(name)

    async def _delete_namespace(
        self, info: ResourceInfo, old: Obj, *, dry_run: bool, copy: bool
    ) -> Obj:
        if dry_run:
            return self._out(info, old, copy)
        name = old["metadata"]["name"]
        if not old["metadata"].get("deletionTimestamp"):
            new = dict(old)
            new["metadata"] = dict(
                old["metadata"],
                deletionTimestamp=timestamp(self._wall()),
                deletionGracePeriodSeconds=0,
            )
            new["status"] = {"phase": "Terminating"}
            old = self._commit(info, "MODIFIED", "", name, new, old)
        for key, by_ns in list(self._objects.items()):
            res = self.resources.by_key(key)
            if res is None or not res.namespaced:
                continue
            for obj in list((by_ns.get(name) or {}).values()):
                with contextlib.suppress(se.StatusError):
                    await self.delete(res, name, obj["metadata"]["name"], copy=False)
        ns_obj = self._find(info, "", name)
        if ns_obj is not None:
            self._maybe_finish_namespace(ns_obj)
            ns_obj = self._find(info, "", name) or ns_obj
        return self._out(info, ns_obj or old, copy)

    def _maybe_finish_namespace(self, ns_obj: Obj) -> None:
        name = ns_obj["metadata"]["name"]
        for by_ns in self._objects.values():
            if by_ns.get(name):
                return
        info = self.resources.get("", "v1", "namespaces")
        assert info is not None
        self._commit(info, "DELETED", "", name, ns_obj, ns_obj)
