"""Per-kind defaulting done by the API server on create and update (pods, services, jobs...).

These are the strategy hooks kube-apiserver runs before storing an object: a pod starts
Pending, a service gets a clusterIP (and node ports), a PVC starts Pending, a namespace is
Active, a job gets its selector. Functions mutate the object they are given (already a copy).
"""

from __future__ import annotations

import base64
import random
from collections.abc import Callable

from rayop.apimachinery.objects import Obj

__all__ = ["IpAllocator", "apply_create_defaults", "apply_update_defaults"]


class IpAllocator:
    """Hands out service cluster IPs (10.96.0.0/12) and node ports (30000-32767)."""

    def __init__(self, *, rng: random.Random | None = None) -> None:
        self._next_ip = 10
        self._used_ports: set[int] = set()
        self._rng = rng or random.Random()

    def cluster_ip(self) -> str:
        """Returns the next free cluster IP."""
        n = self._next_ip
        self._next_ip += 1
        return f"10.{96 + (n >> 16) % 16}.{(n >> 8) & 255}.{n & 255}"

    def node_port(self) -> int:
        """Returns a free node port."""
        for _ in range(3000):
            p = self._rng.randint(30000, 32767)
            if p not in self._used_ports:
                self._used_ports.add(p)
                return p
        raise RuntimeError("node ports exhausted")

    def note_used(self, service: Obj) -> None:
        """Records node ports of an existing (reloaded) service as used."""
        for port in (service.get("spec") or {}).get("ports") or []:
            if isinstance(port, dict) and isinstance(port.get("nodePort"), int):
                self._used_ports.add(port["nodePort"])


def _pod_create(obj: Obj, alloc: IpAllocator) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("serviceAccountName", "default")
    for c in spec.get("containers") or []:
        if isinstance(c, dict):
            c.setdefault("imagePullPolicy", "IfNotPresent")
            c.setdefault("terminationMessagePath", "/dev/termination-log")
            c.setdefault("terminationMessagePolicy", "File")
            c.setdefault("resources", {})
    obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}


def _service_create(obj: Obj, alloc: IpAllocator) -> None:
    spec = obj.setdefault("spec", {})
    stype = spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if stype != "ExternalName":
        ip = spec.get("clusterIP")
        if not ip:
            ip = alloc.cluster_ip()
            spec["clusterIP"] = ip
        spec["clusterIPs"] = [ip]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        if not isinstance(port, dict):
            continue
        port.setdefault("protocol", "TCP")
        if "port" in port and port.get("targetPort") in (None, 0, ""):  # Go clients send 0
            port["targetPort"] = port["port"]
        if stype in ("NodePort", "LoadBalancer") and not port.get("nodePort"):
            port["nodePort"] = alloc.node_port()
    if stype in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    obj["status"] = {"loadBalancer": {}}


def _service_update(obj: Obj, old: Obj, alloc: IpAllocator) -> None:
    spec = obj.setdefault("spec", {})
    old_spec = old.get("spec") or {}
    for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        if key not in spec and key in old_spec:
            spec[key] = old_spec[key]
    _service_create_ports_only(obj, alloc)


def _service_create_ports_only(obj: Obj, alloc: IpAllocator) -> None:
    spec = obj.get("spec") or {}
    stype = spec.get("type", "ClusterIP")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if "port" in port and port.get("targetPort") in (None, 0, ""):
                port["targetPort"] = port["port"]
            if stype in ("NodePort", "LoadBalancer") and not port.get("nodePort"):
                port["nodePort"] = alloc.node_port()


def _namespace_create(obj: Obj, alloc: IpAllocator) -> None:
    meta = obj["metadata"]
    meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
    obj["spec"] = {"finalizers": ["kubernetes"]}
    obj["status"] = {"phase": "Active"}


def _pvc_create(obj: Obj, alloc: IpAllocator) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("volumeMode", "Filesystem")
    obj["status"] = {"phase": "Pending"}  # sim/controller_manager/volumes.py binds it


def _job_create(obj: Obj, alloc: IpAllocator) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("parallelism", 1)
    spec.setdefault("completions", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    uid = obj["metadata"]["uid"]
    name = obj["metadata"]["name"]
    if not spec.get("manualSelector"):
        labels = {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": name,
            "controller-uid": uid,
            "job-name": name,
        }
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        tmpl = spec.setdefault("template", {})
        tmeta = tmpl.setdefault("metadata", {})
        tmeta.setdefault("labels", {}).update(labels)
        obj["metadata"].setdefault("labels", {}).update(
            {k: v for k, v in labels.items() if "job-name" in k or "controller-uid" in k}
        )
    tspec = spec.setdefault("template", {}).setdefault("spec", {})
    tspec.setdefault("restartPolicy", "Never")
    obj["status"] = {}


def _crd_create(obj: Obj, alloc: IpAllocator) -> None:
    spec = obj.get("spec") or {}
    names = dict(spec.get("names") or {})
    names.setdefault("singular", str(names.get("kind", "")).lower())
    names.setdefault("listKind", str(names.get("kind", "")) + "List")
    obj["status"] = {
        "acceptedNames": names,
        "storedVersions": [v["name"] for v in spec.get("versions") or [] if v.get("storage")],
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "reason": "NoConflicts",
                "message": "no conflicts found",
                "lastTransitionTime": obj["metadata"]["creationTimestamp"],
            },
            {
                "type": "Established",
                "status": "True",
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
                "lastTransitionTime": obj["metadata"]["creationTimestamp"],
            },
        ],
    }


def _secret_create(obj: Obj, alloc: IpAllocator) -> None:
    if not obj.get("type"):
        obj["type"] = "Opaque"
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict):
        data = obj.setdefault("data", {})
        for k, v in string_data.items():
            data[k] = base64.b64encode(str(v).encode()).decode()


_CREATE: dict[str, Callable[[Obj, IpAllocator], None]] = {
    "/pods": _pod_create,
    "/services": _service_create,
    "/namespaces": _namespace_create,
    "/persistentvolumeclaims": _pvc_create,
    "batch/jobs": _job_create,
    "apiextensions.k8s.io/customresourcedefinitions": _crd_create,
    "/secrets": _secret_create,
}


def apply_create_defaults(key: str, obj: Obj, alloc: IpAllocator) -> None:
    """Applies the create-time defaults of the resource stored under ``key`` to ``obj``."""
    fn = _CREATE.get(key)
    if fn is not None:
        fn(obj, alloc)


def apply_update_defaults(key: str, obj: Obj, old: Obj, alloc: IpAllocator) -> None:
    """Applies update-time defaults (immutable allocations carried over from ``old``)."""
    if key == "/services":
        _service_update(obj, old, alloc)
    elif key == "/pods":
        spec = obj.get("spec")
        old_spec = old.get("spec") or {}
        if isinstance(spec, dict) and "nodeName" in old_spec and "nodeName" not in spec:
            spec["nodeName"] = old_spec["nodeName"]
