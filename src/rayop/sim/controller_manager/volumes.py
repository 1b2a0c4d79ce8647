"""The PersistentVolume controller and a local-path provisioner, with kind's default StorageClass.

As in a kind cluster, a StorageClass ``standard`` (default class, provisioner
``rancher.io/local-path``, ``WaitForFirstConsumer``, reclaim ``Delete``) exists from the start
(one that is already stored is never overwritten). A claim without ``storageClassName`` gets the
default class (the retroactive assignment of kube-controller-manager). Claims of the
provisioner's classes get a PersistentVolume ``pvc-<claim uid>`` once the scheduler picked a node
(annotation ``volume.kubernetes.io/selected-node``) or at once for ``Immediate`` classes; other
claims bind to an Available PersistentVolume of their class that is large enough and offers
their access modes. A bound claim's volume is deleted with the claim when its reclaim policy is
Delete, and marked Released otherwise.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from rayop.apimachinery.objects import Obj
from rayop.apimachinery.quantity import parse_quantity
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.machinery.timestamps import now_rfc3339
from rayop.sim.storage.controller_base import StoreController, error_code, meta
from rayop.sim.storage.store import Store

__all__ = ["DEFAULT_STORAGE_CLASS", "PROVISIONER", "SELECTED_NODE", "VolumeController"]

PROVISIONER = "rancher.io/local-path"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
DEFAULT_STORAGE_CLASS: Obj = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "standard", "annotations": {DEFAULT_CLASS_ANNOTATION: "true"}},
    "provisioner": PROVISIONER,
    "reclaimPolicy": "Delete",
    "volumeBindingMode": "WaitForFirstConsumer",
}


def _request(claim: Obj) -> str:
    return str(
        (((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage")
        or "0"
    )


def _size(value: object) -> Any:
    try:
        return parse_quantity(value)
    except ValueError:
        return 0


class VolumeController(StoreController):
    """Binds PersistentVolumeClaims (see the module docstring)."""

    name = "volumes"
    watched = frozenset(
        {
            ("", "persistentvolumeclaims"),
            ("", "persistentvolumes"),
            ("storage.k8s.io", "storageclasses"),
        }
    )

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self._classes: dict[str, Obj] = {}

    def observe(self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        if info.plural == "storageclasses":
            name = str(meta(obj).get("name") or "")
            if event_type == "DELETED":
                self._classes.pop(name, None)
            else:
                self._classes[name] = obj

    def default_class(self) -> str | None:
        """Returns the name of the default StorageClass, or None."""
        for name, sc in sorted(self._classes.items()):
            if (meta(sc).get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true":
                return name
        return None

    async def resync(self) -> None:
        classes = self.resource("storage.k8s.io", "v1", "storageclasses")
        if classes is not None:
            with contextlib.suppress(Exception):
                await self.store.create(classes, "", copy.deepcopy(DEFAULT_STORAGE_CLASS))
            for sc in self.store.list(classes)[0]:
                self.observe("ADDED", classes, sc, None)
        claims = self.resource("", "v1", "persistentvolumeclaims")
        if claims is not None:
            for claim in self.store.list(claims)[0]:
                await self.handle("ADDED", claims, claim, None)

    async def handle(self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        if info.plural == "persistentvolumeclaims":
            if event_type == "DELETED":
                await self._reclaim(obj)
            else:
                await self._sync_claim(info, obj)
        elif (info.plural == "persistentvolumes" and event_type == "ADDED") or (
            info.plural == "storageclasses" and event_type != "DELETED"
        ):
            claims = self.resource("", "v1", "persistentvolumeclaims")
            if claims is not None:
                for claim in self.store.list(claims)[0]:
                    if not (claim.get("spec") or {}).get("volumeName"):
                        await self._sync_claim(claims, claim)

    async def _sync_claim(self, info: ResourceInfo, claim: Obj) -> None:
        md, spec = meta(claim), claim.get("spec") or {}
        ns, name, uid = str(md.get("namespace") or ""), str(md["name"]), str(md.get("uid") or "")
        if md.get("deletionTimestamp") or spec.get("volumeName"):
            return
        if "storageClassName" not in spec or spec.get("storageClassName") is None:
            default = self.default_class()
            if default is not None:

                def assign(c: Obj, cls: str = default) -> bool:
                    if (c.get("spec") or {}).get("storageClassName") is not None:
                        return False
                    c["spec"] = dict(c.get("spec") or {}, storageClassName=cls)
                    return True

                await self.mutate(info, ns, name, assign, uid=uid)
                return  # the update comes back as an event
        if not (claim.get("status") or {}).get("phase"):
            await self.mutate(info, ns, name, _pending, subresource="status", uid=uid)
        cls = self._classes.get(str(spec.get("storageClassName") or ""))
        if cls is not None and cls.get("provisioner") == PROVISIONER:
            node = (md.get("annotations") or {}).get(SELECTED_NODE)
            if node or cls.get("volumeBindingMode", "Immediate") == "Immediate":
                volume = await self._provision(claim, cls, node)
                if volume is not None:
                    await self._bind(info, claim, volume)
            return
        volume = self._find_static(claim)
        if volume is not None:
            await self._bind(info, claim, volume)

    async def _provision(self, claim: Obj, cls: Obj, node: str | None) -> Obj | None:
        volumes = self.resource("", "v1", "persistentvolumes")
        if volumes is None:
            return None
        md, spec = meta(claim), claim.get("spec") or {}
        ns, name, uid = str(md.get("namespace") or ""), str(md["name"]), str(md.get("uid"))
        pv_name = f"pvc-{uid}"
        existing = self.store.peek(volumes, "", pv_name)
        if existing is not None:
            return existing
        pv: Obj = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": pv_name,
                "annotations": {"pv.kubernetes.io/provisioned-by": PROVISIONER},
                "finalizers": ["kubernetes.io/pv-protection"],
            },
            "spec": {
                "capacity": {"storage": _request(claim)},
                "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
                "persistentVolumeReclaimPolicy": cls.get("reclaimPolicy") or "Delete",
                "storageClassName": meta(cls).get("name"),
                "volumeMode": spec.get("volumeMode") or "Filesystem",
                "hostPath": {
                    "path": f"/var/local-path-provisioner/{pv_name}_{ns}_{name}",
                    "type": "DirectoryOrCreate",
                },
                "claimRef": _claim_ref(claim),
            },
        }
        if node:
            pv["spec"]["nodeAffinity"] = {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "kubernetes.io/hostname",
                                    "operator": "In",
                                    "values": [node],
                                }
                            ]
                        }
                    ]
                }
            }
        try:
            return await self.store.create(volumes, "", pv)
        except Exception as exc:
            if error_code(exc) != 409:
                raise
            return self.store.peek(volumes, "", pv_name)

    def _find_static(self, claim: Obj) -> Obj | None:
        volumes = self.resource("", "v1", "persistentvolumes")
        if volumes is None:
            return None
        spec = claim.get("spec") or {}
        wanted_class = str(spec.get("storageClassName") or "")
        modes = set(spec.get("accessModes") or [])
        need = _size(_request(claim))
        fits: list[tuple[Any, str, Obj]] = []
        for pv in self.store.list(volumes)[0]:
            pv_spec = pv.get("spec") or {}
            ref = pv_spec.get("claimRef") or {}
            if ref and ref.get("uid") not in (None, meta(claim).get("uid")):
                continue
            if (pv.get("status") or {}).get("phase") not in (None, "Available", "Pending"):
                continue
            if str(pv_spec.get("storageClassName") or "") != wanted_class:
                continue
            if not modes <= set(pv_spec.get("accessModes") or []):
                continue
            size = _size((pv_spec.get("capacity") or {}).get("storage"))
            if size >= need:
                fits.append((size, str(meta(pv).get("name")), pv))
        return min(fits, key=lambda f: (f[0], f[1]))[2] if fits else None

    async def _bind(self, claims: ResourceInfo, claim: Obj, volume: Obj) -> None:
        volumes = self.resource("", "v1", "persistentvolumes")
        assert volumes is not None
        pv_name = str(meta(volume)["name"])
        md = meta(claim)
        ns, name, uid = str(md.get("namespace") or ""), str(md["name"]), str(md.get("uid"))
        provisioned = (meta(volume).get("annotations") or {}).get("pv.kubernetes.io/provisioned-by")

        def claim_volume(pv: Obj) -> bool:
            pv["spec"] = dict(pv.get("spec") or {}, claimRef=_claim_ref(claim))
            return True

        claimed = ((volume.get("spec") or {}).get("claimRef") or {}).get("uid") == uid
        if not claimed and await self.mutate(volumes, "", pv_name, claim_volume) is None:
            return
        await self.mutate(volumes, "", pv_name, _phase("Bound"), subresource="status")

        def bind(c: Obj) -> bool:
            if (c.get("spec") or {}).get("volumeName"):
                return False
            c["spec"] = dict(c.get("spec") or {}, volumeName=pv_name)
            annotations = dict(meta(c).get("annotations") or {})
            annotations["pv.kubernetes.io/bind-completed"] = "yes"
            annotations["pv.kubernetes.io/bound-by-controller"] = "yes"
            if provisioned:
                annotations["volume.beta.kubernetes.io/storage-provisioner"] = provisioned
                annotations["volume.kubernetes.io/storage-provisioner"] = provisioned
            meta(c)["annotations"] = annotations
            return True

        if await self.mutate(claims, ns, name, bind, uid=uid) is None:
            return
        pv_spec = volume.get("spec") or {}

        def bound(c: Obj) -> bool:
            c["status"] = {
                "phase": "Bound",
                "accessModes": list(pv_spec.get("accessModes") or []),
                "capacity": dict(pv_spec.get("capacity") or {}),
            }
            return True

        await self.mutate(claims, ns, name, bound, subresource="status", uid=uid)

    async def _reclaim(self, claim: Obj) -> None:
        volumes = self.resource("", "v1", "persistentvolumes")
        pv_name = (claim.get("spec") or {}).get("volumeName")
        if volumes is None or not pv_name:
            return
        pv = self.store.peek(volumes, "", str(pv_name))
        if pv is None:
            return
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        if ref.get("uid") != meta(claim).get("uid"):
            return
        if (pv.get("spec") or {}).get("persistentVolumeReclaimPolicy") == "Delete":

            def unprotect(v: Obj) -> bool:
                finalizers = [f for f in meta(v).get("finalizers") or [] if f != _PV_PROTECTION]
                meta(v)["finalizers"] = finalizers
                return True

            await self.mutate(volumes, "", str(pv_name), unprotect)
            await self.delete(volumes, "", str(pv_name))
        else:
            await self.mutate(volumes, "", str(pv_name), _phase("Released"), subresource="status")


_PV_PROTECTION = "kubernetes.io/pv-protection"


def _claim_ref(claim: Obj) -> Obj:
    md = meta(claim)
    return {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": md.get("namespace"),
        "name": md.get("name"),
        "uid": md.get("uid"),
        "resourceVersion": md.get("resourceVersion"),
    }


def _phase(phase: str) -> Any:
    def change(obj: Obj) -> bool:
        status = obj.setdefault("status", {})
        if status.get("phase") == phase:
            return False
        status["phase"] = phase
        status["lastPhaseTransitionTime"] = now_rfc3339()
        return True

    return change


def _pending(claim: Obj) -> bool:
    status = claim.setdefault("status", {})
    if status.get("phase"):
        return False
    status["phase"] = "Pending"
    return True
