"""Normalising and diffing the pods and services two operators created for the same RayCluster.

What differs by nature is removed first: names the API server generates, uids, resource
versions, timestamps, managed fields, owner-reference uids (also inside values, such as the
RayCluster uid KubeRay uses as GCS external storage namespace), the namespace (also inside
values such as service DNS names), allocated cluster IPs and node ports, the node a pod landed on, and
pod status (written by the scheduler and kwok, not by the operator). Pods are then grouped by
role (head, or worker group) and compared as sorted lists, since two workers of one group are
interchangeable.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

Obj = dict[str, Any]

META_DROP = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "managedFields",
    "generation",
    "namespace",
    "selfLink",
)
POD_NAME_SUFFIX = re.compile(r"-[a-z0-9]{5}$")


def _replace_strings(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [_replace_strings(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _replace_strings(v, old, new) for k, v in value.items()}
    return value


def _common_metadata(obj: Obj) -> Obj:
    owner_uids = [r["uid"] for r in obj["metadata"].get("ownerReferences") or [] if r.get("uid")]
    out = copy.deepcopy(obj)
    for uid in owner_uids:  # e.g. the RayCluster uid as the GCS external storage namespace
        out = _replace_strings(out, uid, "<owner-uid>")
    meta = out.setdefault("metadata", {})
    for key in META_DROP:
        meta.pop(key, None)
    for ref in meta.get("ownerReferences") or []:
        ref.pop("uid", None)
    out.pop("status", None)
    return out


def normalize_pod(pod: Obj) -> Obj:
    """Returns a pod without the fields that differ by nature (see the module docstring)."""
    out = _common_metadata(pod)
    namespace = pod["metadata"]["namespace"]
    meta = out["metadata"]
    if meta.get("generateName"):
        meta.pop("name", None)  # generated: <generateName><5 random characters>
    elif "name" in meta:
        meta["name"] = POD_NAME_SUFFIX.sub("-<random>", meta["name"])
    spec = out.get("spec") or {}
    spec.pop("nodeName", None)
    return _replace_strings(out, namespace, "<namespace>")  # type: ignore[no-any-return]


def normalize_service(service: Obj) -> Obj:
    """Returns a service without the fields that differ by nature (see the module docstring)."""
    out = _common_metadata(service)
    namespace = service["metadata"]["namespace"]
    spec = out.get("spec") or {}
    if spec.get("clusterIP") not in (None, "None"):
        spec.pop("clusterIP", None)
        spec.pop("clusterIPs", None)
    for port in spec.get("ports") or []:
        port.pop("nodePort", None)
    return _replace_strings(out, namespace, "<namespace>")  # type: ignore[no-any-return]


def pod_role(pod: Obj) -> str:
    """Returns ``head`` or ``worker/<group>`` for a Ray pod, ``other/<name>`` otherwise."""
    labels = pod["metadata"].get("labels") or {}
    kind = labels.get("ray.io/node-type")
    if kind == "head":
        return "head"
    if kind == "worker":
        return f"worker/{labels.get('ray.io/group', '')}"
    return f"other/{pod['metadata'].get('generateName') or pod['metadata']['name']}"


def snapshot(pods: list[Obj], services: list[Obj]) -> dict[str, Any]:
    """Returns the normalised pods (by role, as sorted lists) and services (by name)."""
    by_role: dict[str, list[Obj]] = {}
    for pod in pods:
        if pod["metadata"].get("deletionTimestamp"):
            continue
        by_role.setdefault(pod_role(pod), []).append(normalize_pod(pod))
    return {
        "pods": {
            role: sorted(items, key=lambda p: json.dumps(p, sort_keys=True))
            for role, items in by_role.items()
        },
        "services": {s["metadata"]["name"]: normalize_service(s) for s in services},
    }


def diff(left: Any, right: Any, path: str = "") -> list[str]:
    """Returns ``path: left != right`` lines for every leaf where two JSON values differ."""
    if isinstance(left, dict) and isinstance(right, dict):
        out: list[str] = []
        for key in sorted(set(left) | set(right), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in left:
                out.append(f"{sub}: missing in kuberay, rayop has {_short(right[key])}")
            elif key not in right:
                out.append(f"{sub}: kuberay has {_short(left[key])}, missing in rayop")
            else:
                out.extend(diff(left[key], right[key], sub))
        return out
    if isinstance(left, list) and isinstance(right, list):
        if len(left) != len(right):
            return [
                f"{path}: kuberay has {len(left)} items, rayop {len(right)}: "
                f"{_short(left)} vs {_short(right)}"
            ]
        out = []
        for i, (a, b) in enumerate(zip(left, right, strict=True)):
            key = (
                a.get("name")
                if isinstance(a, dict)
                and a.get("name") == (b.get("name") if isinstance(b, dict) else None)
                else i
            )
            out.extend(diff(a, b, f"{path}[{key}]"))
        return out
    if left != right:
        return [f"{path}: kuberay {_short(left)} != rayop {_short(right)}"]
    return []


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."
