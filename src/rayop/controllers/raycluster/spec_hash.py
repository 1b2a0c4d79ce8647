"""The RayCluster spec hash behind ``upgradeStrategy: Recreate``.

KubeRay hashes the spec with the fields that scaling and external schedulers change muted
(replicas, minReplicas, maxReplicas, workersToDelete, tolerations, schedulingGates,
upgradeStrategy) and stores it on the head pod; a different hash means the pods are stale.
rayop uses the same algorithm (SHA-1, base32hex) over canonical JSON (sorted keys), so its
values are stable across rayop versions but are not byte-equal to KubeRay's Go JSON encoding.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from typing import Any

from rayop.controllers.common import cluster_spec as cs
from rayop.controllers.common.cluster_spec import Obj


def _mute_template(group: dict[str, Any]) -> None:
    spec = (group.get("template") or {}).get("spec")
    if isinstance(spec, dict):
        spec.pop("tolerations", None)
        spec.pop("schedulingGates", None)


def spec_hash(cluster: Obj) -> str:
    """Returns the hash of the cluster spec without the scaling-related fields."""
    spec: dict[str, Any] = copy.deepcopy(dict(cs.spec(cluster)))
    head = spec.get("headGroupSpec")
    if isinstance(head, dict):
        head.setdefault("rayStartParams", {})
        _mute_template(head)
    for group in spec.get("workerGroupSpecs") or []:
        for key in ("replicas", "minReplicas", "maxReplicas"):
            group.pop(key, None)
        (group.get("scaleStrategy") or {}).pop("workersToDelete", None)
        group.setdefault("rayStartParams", {})
        _mute_template(group)
    spec.pop("upgradeStrategy", None)
    payload = json.dumps(spec, sort_keys=True, separators=(",", ":")).encode()
    return base64.b32hexencode(hashlib.sha1(payload, usedforsecurity=False).digest()).decode()
