"""The object store of the embedded API server: the write path (create, update, delete).

Reads, the change feed and watches live in :mod:`rayop.sim.store_core`; this module adds the
write semantics of kube-apiserver: names and generateName, namespaces, status subresource,
generation, optimistic concurrency, finalizers, graceful pod deletion, namespace and CRD
cleanup. Stored objects are never mutated in place; public methods copy in and out unless
called with ``copy=False``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from rayop.sim import crd as crd_mod
from rayop.sim import status_errors as se
from rayop.sim.defaults import apply_create_defaults, apply_update_defaults
from rayop.sim.resources import ResourceInfo
from rayop.sim.store_core import (
    CRD_KEY,
    NAME_ALPHABET,
    NS_KEY,
    Expired,
    Obj,
    Persistence,
    StoreCore,
    Subscriber,
    clone,
    timestamp,
)
from rayop.sim.validation import validate_object_meta

__all__ = ["Expired", "Persistence", "Store", "Subscriber", "clone"]


class Store(StoreCore):
    """In-memory objects with a global resourceVersion, watch history and a change feed.

    See :class:`~rayop.sim.store_core.StoreCore` for the constructor arguments, reads
    (get, list, peek), ``subscribe`` and watches (``open_watch``, ``watch``).
    """

    # ----------------------------------------------------------------- create
    async def create(
        self,
        info: ResourceInfo,
        namespace: str | None,
        obj: Obj,
        *,
        dry_run: bool = False,
        copy: bool = True,
    ) -> Obj:
        """Creates an object and returns it as stored.

        Raises:
            StatusError: 409 AlreadyExists, 404 when the namespace is missing, 403 when it is
                terminating, 400 for a malformed body, 422 Invalid (CRD schema, names).
        """
        alias = self._alias(info)
        if alias is not None and isinstance(obj, dict):
            made = await self.create(alias[0], namespace, alias[1](obj), dry_run=dry_run, copy=copy)
            return alias[2](made)
        if copy:
            obj = clone(obj)
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata", {}), dict):
            raise se.bad_request("the body of the request is not a valid object")
        meta = obj.setdefault("metadata", {})
        ns = self._check_namespace(info, namespace, meta)
        obj["apiVersion"] = info.api_version
        obj["kind"] = info.kind
        self._stamp_new(info, obj)
        if info.has_status:
            obj.pop("status", None)
        if info.is_custom:
            crd_mod.admit_custom(info, obj, None)
        elif info.key == CRD_KEY:
            crd_mod.validate_crd(obj)
        name = meta.get("name")
        if not name:
            gen = meta.get("generateName")
            if not gen:
                raise se.invalid(
                    info.kind,
                    info.group,
                    "",
                    [
                        (
                            "metadata.name",
                            "FieldValueRequired",
                            "Required value: name or generateName is required",
                        )
                    ],
                )
            bucket = self._bucket(info.key, ns)
            for _ in range(8):
                name = gen[:58] + "".join(self._rng.choice(NAME_ALPHABET) for _ in range(5))
                if name not in bucket:
                    break
            meta["name"] = name
        elif not isinstance(name, str):
            raise se.bad_request("metadata.name must be a string")
        validate_object_meta(info, obj, check_name=True)
        if self._find(info, ns, name) is not None:
            raise se.already_exists(info.plural, info.group, name)
        apply_create_defaults(info.key, obj, self._alloc)
        if dry_run:
            return clone(obj) if copy else obj
        stored = self._commit(info, "ADDED", ns, name, obj, None)
        if info.key == CRD_KEY:
            self.resources.register_crd(stored)
        return clone(stored) if copy else stored

    def _check_namespace(self, info: ResourceInfo, namespace: str | None, meta: Obj) -> str:
        if not info.namespaced:
            meta.pop("namespace", None)
            return ""
        body_ns = meta.get("namespace")
        ns = namespace or body_ns or "default"
        if body_ns and namespace and body_ns != namespace:
            raise se.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = ns
        ns_obj = self._objects.get(NS_KEY, {}).get("", {}).get(ns)
        if ns_obj is None:
            raise se.not_found("namespaces", "", ns)
        if ns_obj["metadata"].get("deletionTimestamp"):
            raise se.forbidden(
                f'{info.kind.lower()} "{meta.get("name") or meta.get("generateName", "")}" is forbidden: '
                f"unable to create new content in namespace {ns} because it is being terminated",
                resource=info.plural,
                group=info.group,
                name=meta.get("name", ""),
            )
        return ns

    # ----------------------------------------------------------------- update
    async def update(
        self,
        info: ResourceInfo,
        namespace: str | None,
        name: str,
        obj: Obj,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        copy: bool = True,
        with_status: bool = False,
    ) -> Obj:
        """Replaces an object (PUT), or only its status with ``subresource="status"``.

        A no-op update keeps the RV and emits nothing. Removing the last finalizer of an
        object being deleted deletes it (the DELETED object is returned). ``with_status``
        (in-process controllers only; HTTP never sets it) makes a main-resource write take the
        status from ``obj`` too, in one commit: the scheduler's binding and the kubelet's first
        status report as one write.

        Raises:
            StatusError: 404, 409 Conflict on a stale RV, 422 Invalid, 400 on name mismatch.
        """
        alias = self._alias(info)
        if alias is not None and isinstance(obj, dict):
            done = await self.update(
                alias[0],
                namespace,
                name,
                alias[1](obj),
                subresource=subresource,
                dry_run=dry_run,
                copy=copy,
                with_status=with_status,
            )
            return alias[2](done)
        if copy:
            obj = clone(obj)
        ns = (namespace or "") if info.namespaced else ""
        old = self._find(info, ns, name)
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            raise se.bad_request("metadata is required")
        if meta.get("name", name) != name:
            raise se.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
            )
        if old is None:
            raise self._not_found(info, name)
        if subresource not in (None, "status") or (subresource and not info.has_status):
            raise se.not_found(f"{info.plural}/{subresource}", info.group, name)
        rv = meta.get("resourceVersion")
        old_meta = old["metadata"]
        if rv:
            if rv != old_meta["resourceVersion"]:
                raise se.conflict(info.plural, info.group, name)
        elif info.is_custom:
            raise se.invalid(
                info.kind,
                info.group,
                name,
                [
                    (
                        "metadata.resourceVersion",
                        "FieldValueInvalid",
                        "Invalid value: 0x0: must be specified for an update",
                    )
                ],
            )
        new = self._merge_update(info, old, obj, subresource, with_status=with_status)
        return self._finish_write(info, ns, name, new, old, dry_run=dry_run, copy=copy)

    def _merge_update(
        self, info: ResourceInfo, old: Obj, obj: Obj, subresource: str | None, *, with_status: bool
    ) -> Obj:
        old_meta = old["metadata"]
        if subresource == "status":
            new = dict(old)
            new["metadata"] = dict(old_meta)
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
            if info.is_custom:
                crd_mod.admit_custom(info, new, old)
            return new
        new = obj
        meta = new["metadata"]
        for k in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "namespace",
            "generation",
        ):
            if k in old_meta:
                meta[k] = old_meta[k]
            else:
                meta.pop(k, None)
        meta["name"] = old_meta["name"]
        new["apiVersion"] = old.get("apiVersion", info.api_version)
        new["kind"] = info.kind
        if info.has_status and not with_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        if old_meta.get("deletionTimestamp"):
            added = set(meta.get("finalizers") or ()) - set(old_meta.get("finalizers") or ())
            if added:
                raise se.invalid(
                    info.kind,
                    info.group,
                    old_meta["name"],
                    [
                        (
                            "metadata.finalizers",
                            "FieldValueForbidden",
                            "Forbidden: no new finalizers can be added if the object is being deleted, "
                            f"found new finalizers {sorted(added)!r}",
                        )
                    ],
                )
        if meta.get("labels") != old_meta.get("labels") or meta.get("annotations") != old_meta.get(
            "annotations"
        ):
            validate_object_meta(info, new, check_name=False)  # the old ones were valid
        if info.is_custom:
            crd_mod.admit_custom(info, new, old)
        elif info.key == CRD_KEY:
            crd_mod.validate_crd(new)
        apply_update_defaults(info.key, new, old, self._alloc)
        if "generation" in old_meta and _spec_changed(old, new, info.has_status):
            meta["generation"] = old_meta["generation"] + 1
        return new

    def _finish_write(
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
        meta = new["metadata"]
        meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        if not meta.get("finalizers"):
            meta.pop("finalizers", None)
        if new == old:
            return self._out(info, old, copy)
        if dry_run:
            return clone(new) if copy else new
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and not self._awaits_kubelet(info, new)
        ):
            stored = self._commit(info, "DELETED", ns, name, new, old)
            self._after_delete(info, stored)
        else:
            stored = self._commit(info, "MODIFIED", ns, name, new, old)
            if info.key == CRD_KEY:
                self.resources.register_crd(stored)
        return clone(stored) if copy else stored

    def _awaits_kubelet(self, info: ResourceInfo, obj: Obj) -> bool:
        """A gracefully deleted pod stays until the kubelet calls finalize_delete."""
        return (
            info.key == "/pods"
            and bool(obj["metadata"].get("deletionGracePeriodSeconds"))
            and self.graceful_pod_deletion
        )

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


def _spec_changed(old: Obj, new: Obj, has_status: bool) -> bool:
    skip = {"metadata", "status"} if has_status else {"metadata"}
    keys = (set(old) | set(new)) - skip
    return any(old.get(k) != new.get(k) for k in keys)
