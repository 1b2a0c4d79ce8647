"""The write path: kube-apiserver's create and update semantics on top of the object table.

Names and generateName, namespaces (missing, terminating), the status subresource, generation,
optimistic concurrency, and admission through :mod:`rayop.sim.admission` (CRD schemas and
CEL rules, object-meta validation, per-kind defaults, ResourceQuota). Every update is committed
through the delete path, which finishes a deletion when the last finalizer goes. Stored objects
are never mutated in place.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from rayop.apimachinery.objects import Obj
from rayop.sim.admission import crd_schema as crd_mod
from rayop.sim.admission.defaults import IpAllocator, apply_create_defaults, apply_update_defaults
from rayop.sim.admission.extended_resource_toleration import add_extended_resource_tolerations
from rayop.sim.admission.object_meta import validate_object_meta
from rayop.sim.admission.quota_admission import charge
from rayop.sim.machinery import errors as se
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.machinery.timestamps import timestamp
from rayop.sim.storage.aliases import find_alias
from rayop.sim.storage.delete_path import DeletePath
from rayop.sim.storage.objects import CRD_KEY, NS_KEY, ObjectTable, clone
from rayop.sim.storage.webhook_admission import WebhookAdmission

__all__ = ["NAME_ALPHABET", "WritePath"]

NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
QUOTA_KEY = "/resourcequotas"
_KEPT_ON_UPDATE = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "namespace",
    "generation",
)


@dataclass(eq=False)
class WritePath:
    """Creates and updates objects.

    Attributes:
        table: The object table to read and commit to.
        deletes: The delete path every update is committed through.
        wall_clock: Returns Unix time for creationTimestamp.
        rng: The source of generateName suffixes.
        ips: Allocates cluster IPs and node ports.
    """

    table: ObjectTable
    deletes: DeletePath
    wall_clock: Callable[[], float]
    rng: random.Random
    ips: IpAllocator
    admission: WebhookAdmission | None = None
    """Validating webhooks, called after defaulting and before the commit (None: none)."""
    extended_resource_toleration: bool = False
    """Run the ExtendedResourceToleration admission plugin on pod creates."""

    def seed_namespace(self, name: str) -> None:
        """Creates Namespace ``name`` unless it exists (never blocks; for the store's start)."""
        if self.table.namespace(name) is not None:
            return
        info = self.table.resources.get("", "v1", "namespaces")
        assert info is not None
        obj: Obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        self._stamp_new(info, obj)
        apply_create_defaults(NS_KEY, obj, self.ips)
        self.table.commit(info, "ADDED", "", name, obj, None)

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
        alias = find_alias(self.table.resources, info)
        if alias is not None and isinstance(obj, dict):
            into = alias.into(obj)
            return alias.out(
                await self.create(alias.stored, namespace, into, dry_run=dry_run, copy=copy)
            )
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
            name = meta["name"] = self._generate_name(info, ns, meta.get("generateName"))
        elif not isinstance(name, str):
            raise se.bad_request("metadata.name must be a string")
        validate_object_meta(info, obj, check_name=True)
        if self.table.find(info, ns, name) is not None:
            raise se.already_exists(info.plural, info.group, name)
        apply_create_defaults(info.key, obj, self.ips)
        if self.extended_resource_toleration and info.key == "/pods":
            add_extended_resource_tolerations(obj)
        if self.admission is not None:
            await self.admission.admit(info, "CREATE", ns, name, obj, None)
        # No await from here to the commit: the quota charge and the object land together.
        charges = self._quota_charges(info, ns, name, obj)
        if dry_run:
            return clone(obj) if copy else obj
        for quota, status in charges:
            self._commit_quota_status(quota, status)
        stored = self.table.commit(info, "ADDED", ns, name, obj, None)
        if info.key == CRD_KEY:
            self.table.resources.register_crd(stored)
        return clone(stored) if copy else stored

    def _quota_charges(
        self, info: ResourceInfo, ns: str, name: str, obj: Obj
    ) -> list[tuple[Obj, Obj]]:
        """The ResourceQuota admission plugin's verdict on a create (403 when over quota)."""
        if not ns:
            return []
        quotas = self.table.in_namespace(QUOTA_KEY, ns)
        return charge(quotas, info, name, obj) if quotas else []

    def _commit_quota_status(self, quota: Obj, status: Obj) -> None:
        info = self.table.resources.by_key(QUOTA_KEY)
        assert info is not None
        new = {**quota, "metadata": dict(quota["metadata"]), "status": status}
        meta = quota["metadata"]
        self.deletes.commit_change(
            info, meta["namespace"], meta["name"], new, quota, dry_run=False, copy=False
        )

    def _generate_name(self, info: ResourceInfo, ns: str, prefix: str | None) -> str:
        if not prefix:
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
        bucket = self.table.bucket(info.key, ns)
        name = prefix
        for _ in range(8):
            name = prefix[:58] + "".join(self.rng.choice(NAME_ALPHABET) for _ in range(5))
            if name not in bucket:
                break
        return name

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
        ns_obj = self.table.namespace(ns)
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

    def _stamp_new(self, info: ResourceInfo, obj: Obj) -> None:
        meta = obj["metadata"]
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = timestamp(self.wall_clock())
        if info.has_status or info.is_custom:
            meta["generation"] = 1
        for k in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(k, None)

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
        alias = find_alias(self.table.resources, info)
        if alias is not None and isinstance(obj, dict):
            done = await self.update(
                alias.stored,
                namespace,
                name,
                alias.into(obj),
                subresource=subresource,
                dry_run=dry_run,
                copy=copy,
                with_status=with_status,
            )
            return alias.out(done)
        if copy:
            obj = clone(obj)
        ns = (namespace or "") if info.namespaced else ""
        old = self.table.find(info, ns, name)
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            raise se.bad_request("metadata is required")
        if meta.get("name", name) != name:
            raise se.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
            )
        if old is None:
            raise se.not_found(info.plural, info.group, name)
        if subresource not in (None, "status") or (subresource and not info.has_status):
            raise se.not_found(f"{info.plural}/{subresource}", info.group, name)
        _check_resource_version(info, name, meta.get("resourceVersion"), old)
        if subresource == "status":
            new = _merge_status(info, old, obj)
        else:
            new = self._merge_main(info, old, obj, with_status=with_status)
        if self.admission is not None:
            await self.admission.admit(
                info, "UPDATE", ns, name, new, old, subresource=subresource or ""
            )
        return self.deletes.commit_change(info, ns, name, new, old, dry_run=dry_run, copy=copy)

    def _merge_main(self, info: ResourceInfo, old: Obj, new: Obj, *, with_status: bool) -> Obj:
        old_meta = old["metadata"]
        meta = new["metadata"]
        for k in _KEPT_ON_UPDATE:
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
            _refuse_new_finalizers(info, old_meta, meta)
        if meta.get("labels") != old_meta.get("labels") or meta.get("annotations") != old_meta.get(
            "annotations"
        ):
            validate_object_meta(info, new, check_name=False)  # the old ones were valid
        if info.is_custom:
            crd_mod.admit_custom(info, new, old)
        elif info.key == CRD_KEY:
            crd_mod.validate_crd(new)
        apply_update_defaults(info.key, new, old, self.ips)
        if "generation" in old_meta and _spec_changed(old, new, info.has_status):
            meta["generation"] = old_meta["generation"] + 1
        return new


def _check_resource_version(info: ResourceInfo, name: str, rv: str | None, old: Obj) -> None:
    if rv:
        if rv != old["metadata"]["resourceVersion"]:
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


def _merge_status(info: ResourceInfo, old: Obj, obj: Obj) -> Obj:
    new = dict(old)
    new["metadata"] = dict(old["metadata"])
    if "status" in obj:
        new["status"] = obj["status"]
    else:
        new.pop("status", None)
    if info.is_custom:
        crd_mod.admit_custom(info, new, old)
    return new


def _refuse_new_finalizers(info: ResourceInfo, old_meta: Obj, meta: Obj) -> None:
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


def _spec_changed(old: Obj, new: Obj, has_status: bool) -> bool:
    skip = {"metadata", "status"} if has_status else {"metadata"}
    keys = (set(old) | set(new)) - skip
    return any(old.get(k) != new.get(k) for k in keys)
