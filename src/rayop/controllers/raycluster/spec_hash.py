"""The RayCluster spec hash behind ``upgradeStrategy: Recreate``.

KubeRay stores it on the head pod (``ray.io/upgrade-strategy-recreate-hash``); a different hash
means the pods are stale. It is KubeRay's own hash, bit for bit
(:func:`rayop.controllers.gocompat.spec_hash.raycluster_pod_hash`: Go's JSON of the typed spec
with ``rayStartParams`` defaulted and the scaling and scheduling fields muted), so head pods
KubeRay created are recognised by rayop and the other way round.
"""

from __future__ import annotations

from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.gocompat.spec_hash import raycluster_pod_hash
from rayop.controllers.kit import cluster_access as cs


def spec_hash(cluster: Obj) -> str:
    """Returns KubeRay's hash of the cluster's spec without the scaling-related fields."""
    return raycluster_pod_hash(cs.spec(cluster))
