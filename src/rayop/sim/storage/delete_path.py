"""The delete path: kube-apiserver's deletion semantics on top of the object table.

Propagation policies (the ``foregroundDeletion`` and ``orphan`` finalizers the garbage
collector acts on), preconditions, finalizers and deletionTimestamp, graceful pod deletion
finished by the kubelet (:meth:`DeletePath.finalize_delete`), namespace and CRD cleanup, and
:meth:`DeletePath.commit_change`, through which every update passes so that removing the last
finalizer of an object being deleted deletes it. Stored objects are never mutated in place.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from rayop.apimachinery.objects import Obj
from rayop.sim.machinery import errors as se
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.machinery.timestamps import timestamp
from rayop.sim.storage.aliases import find_alias
from rayop.sim.storage.objects import CRD_KEY, NS_KEY, ObjectTable, clone, output

__all__ = ["DeletePath"]

_POLICY_FINALIZERS = {"Foreground": "foregroundDeletion", "Orphan": "orphan"}


class DeletePath:
    """Deletes objects, or marks them deleting, and finishes deletions when nothing holds them.

    Args:
        table: The object table to read and commit to.
        wall_clock: Returns Unix time for deletionTimestamp.
        graceful_pod_deletion: When True, deleting a scheduled pod with a grace period only
            sets deletionTimestamp, and the kubelet finishes it with :meth:`finalize_delete`.
    """

    def __init__(
        self, table: ObjectTable, *, wall_clock: Callable[[], float], graceful_pod_deletion: bool
    ) -> None:
        self._table = table
        self._wall = wall_clock
        self.graceful_pod_deletion = graceful_pod_deletion

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
        alias = find_alias(self._table.resources, info)
        if alias is not None:
            gone = await self.delete(
                alias.stored,
                namespace,
                name,
                propagation_policy=propagation_policy,
                grace_period_seconds=grace_period_seconds,
                preconditions=preconditions,
                dry_run=dry_run,
                copy=copy,
            )
            return alias.out(gone)
        ns = (namespace or "") if info.namespaced else ""
        old = self._table.find(info, ns, name)
        if old is None:
            raise se.not_found(info.plural, info.group, name)
        old_meta = old["metadata"]
        _check_preconditions(info, old_meta, preconditions)
        if propagation_policy not in (None, "Background", "Foreground", "Orphan"):
            raise se.bad_request(f"unsupported propagationPolicy {propagation_policy!r}")
        finalizers = list(old_meta.get("finalizers") or ())
        extra = _POLICY_FINALIZERS.get(propagation_policy or "")
        if extra and extra not in finalizers and not old_meta.get("deletionTimestamp"):
            finalizers.append(extra)
        grace = self._grace_period(info, old, grace_period_seconds)
        if info.key == NS_KEY:
            return await self._delete_namespace(info, old, dry_run=dry_run, copy=copy)
        if not finalizers and grace == 0:
            if dry_run:
                return output(info, old, copy)
            stored = self._remove(info, ns, name, old)
            return output(info, stored, copy)
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
        return self.commit_change(info, ns, name, new, old, dry_run=dry_run, copy=copy)

    async def finalize_delete(self, info: ResourceInfo, namespace: str | None, name: str) -> bool:
        """Removes an object that is being deleted once it has no finalizers (kubelet/GC hook).

        Returns True when the object is gone (or was already), False when finalizers keep it;
        then its grace period is set to 0 so that removing the last finalizer deletes it.
        """
        ns = (namespace or "") if info.namespaced else ""
        old = self._table.find(info, ns, name)
        if old is None:
            return True
        meta = old["metadata"]
        if meta.get("finalizers"):
            if meta.get("deletionGracePeriodSeconds"):
                new = dict(old)
                new["metadata"] = dict(meta, deletionGracePeriodSeconds=0)
                self._table.commit(info, "MODIFIED", ns, name, new, old)
            return False
        self._remove(info, ns, name, old)
        return True

    def commit_change(
        self,
        info: ResourceInfo,
        ns: str,
        name: str,
        new: Obj,
        old: Obj,
        *,
        dry_run: bool,
        copy: bool,
    ) -> Obj:
        """Commits ``new`` in place of ``old``: a no-op keeps the RV, a finished deletion removes it.

        A change that leaves an object being deleted without finalizers (and not awaiting the
        kubelet) deletes it; the DELETED object is returned.
        """
        meta = new["metadata"]
        meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        if not meta.get("finalizers"):
            meta.pop("finalizers", None)
        if new == old:
            return output(info, old, copy)
        if dry_run:
            return clone(new) if copy else new
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and not self._awaits_kubelet(info, new)
        ):
            stored = self._remove(info, ns, name, new, old)
        else:
            stored = self._table.commit(info, "MODIFIED", ns, name, new, old)
            if info.key == CRD_KEY:
                self._table.resources.register_crd(stored)
        return clone(stored) if copy else stored

    # ----------------------------------------------------------------- helpers
    def _remove(
        self, info: ResourceInfo, ns: str, name: str, last: Obj, old: Obj | None = None
    ) -> Obj:
        """Commits the DELETED change of ``last`` and cleans up after it."""
        stored = self._table.commit(info, "DELETED", ns, name, last, last if old is None else old)
        if info.key == CRD_KEY:
            self._drop_crd(stored)
        obj_ns = stored["metadata"].get("namespace")
        if obj_ns and info.namespaced:
            ns_obj = self._table.namespace(obj_ns)
            if ns_obj is not None and ns_obj["metadata"].get("deletionTimestamp"):
                self._maybe_finish_namespace(ns_obj)
        return stored

    def _awaits_kubelet(self, info: ResourceInfo, obj: Obj) -> bool:
        """A gracefully deleted pod stays until the kubelet calls finalize_delete."""
        return (
            info.key == "/pods"
            and bool(obj["metadata"].get("deletionGracePeriodSeconds"))
            and self.graceful_pod_deletion
        )

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

    def _drop_crd(self, crd: Obj) -> None:
        name = crd["metadata"]["name"]
        resources = self._table.resources
        for info in resources.crd_infos(name)[:1]:
            for obj in list(self._table.iter_objects(info)):
                m = obj["metadata"]
                self._table.commit(info, "DELETED", m.get("namespace", ""), m["name"], obj, obj)
        resources.unregister_crd(name)

    async def _delete_namespace(
        self, info: ResourceInfo, old: Obj, *, dry_run: bool, copy: bool
    ) -> Obj:
        if dry_run:
            return output(info, old, copy)
        name = old["metadata"]["name"]
        if not old["metadata"].get("deletionTimestamp"):
            new = dict(old)
            new["metadata"] = dict(
                old["metadata"],
                deletionTimestamp=timestamp(self._wall()),
                deletionGracePeriodSeconds=0,
            )
            new["status"] = {"phase": "Terminating"}
            old = self._table.commit(info, "MODIFIED", "", name, new, old)
        for key in self._table.resource_keys():
            res = self._table.resources.by_key(key)
            if res is None or not res.namespaced:
                continue
            for obj in self._table.in_namespace(key, name):
                with contextlib.suppress(se.StatusError):
                    await self.delete(res, name, obj["metadata"]["name"], copy=False)
        ns_obj = self._table.find(info, "", name)
        if ns_obj is not None:
            self._maybe_finish_namespace(ns_obj)
            ns_obj = self._table.find(info, "", name) or ns_obj
        return output(info, ns_obj or old, copy)

    def _maybe_finish_namespace(self, ns_obj: Obj) -> None:
        name = ns_obj["metadata"]["name"]
        if not self._table.namespace_empty(name):
            return
        info = self._table.resources.get("", "v1", "namespaces")
        assert info is not None
        self._table.commit(info, "DELETED", "", name, ns_obj, ns_obj)


def _check_preconditions(
    info: ResourceInfo, meta: Obj, preconditions: Mapping[str, Any] | None
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
