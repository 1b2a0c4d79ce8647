"""The create and update half of the store's write path.

Adds to :class:`~rayop.sim.storage.state.StoreCore` the kube-apiserver semantics of create and
update: names and generateName, namespaces, the status subresource, generation, optimistic
concurrency, and the end of a deletion when the last finalizer goes. Deletion itself is in
:class:`rayop.sim.storage.store.Store`. Stored objects are never mutated in place.
"""

from __future__ import annotations

from rayop.sim.admission import crd_schema as crd_mod
from rayop.sim.admission.defaults import apply_create_defaults, apply_update_defaults
from rayop.sim.admission.object_meta import validate_object_meta
from rayop.sim.machinery import errors as se
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.storage.state import CRD_KEY, NAME_ALPHABET, NS_KEY, Obj, StoreCore, clone

__all__ = ["StoreWrites"]


class StoreWrites(StoreCore):
    """Creates and updates objects; subclassed by :class:`rayop.sim.storage.store.Store`."""

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

    def _after_delete(self, info: ResourceInfo, obj: Obj) -> None:
        """Cleans up after an object is gone (namespace and CRD content; see Store)."""


def _spec_changed(old: Obj, new: Obj, has_status: bool) -> bool:
    skip = {"metadata", "status"} if has_status else {"metadata"}
    keys = (set(old) | set(new)) - skip
    return any(old.get(k) != new.get(k) for k in keys)
