"""Pure builders for the RayClusters of a RayService: names, the spec hash, the object itself.

A RayService's cluster is ``<rayservice>-<5 random chars>``, carries the RayService's labels and
annotations plus KubeRay's (``ray.io/originated-from-cr-name``, ``ray.io/originated-from-crd=
RayService``; the spec hash, the worker group count and the KubeRay version; not
``ray.io/enable-serve-service``, so the RayCluster controller makes no ``<cluster>-serve-svc``:
the RayService makes its serve Services itself), and is controlled by the RayService (its one
controller ownerReference, :func:`~rayop.controllers.kit.ownership.controller_reference`). The hash is
KubeRay's own, bit for bit (:mod:`rayop.controllers.gocompat.spec_hash`): ``rayClusterConfig``
without ``suspend`` and without what scaling and external schedulers change (worker replicas,
min/max replicas, ``workersToDelete``, tolerations, scheduling gates, ``upgradeStrategy``), so
the autoscaler or Kueue never triggers an upgrade, and clusters KubeRay built are recognised
as up to date. A different hash means a new cluster is needed, unless the only difference is
worker groups appended at the end (then the cluster is updated). A cluster whose
``ray.io/kuberay-version`` is not ours (built by another KubeRay version) is updated in place
instead when it is the active one (KubeRay #2315: its hash may come from another algorithm).

The builders read the RayService's metadata and spec from the typed
:class:`~rayop.api.rayservice.RayService`; ``rayClusterConfig`` itself is taken raw from the
object as stored (:func:`goal_spec`), since it is copied into the cluster and hashed exactly as
the user wrote it (a parsed and re-dumped spec could differ, and change every hash).
"""

from __future__ import annotations

import copy
import random
from typing import Any

from rayop.api.rayservice import RayService, RayServiceSpec, RayServiceUpgradeType
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.config.options import KUBERAY_VERSION, OperatorOptions
from rayop.controllers.gocompat.spec_hash import rayservice_cluster_hash
from rayop.controllers.kit import names
from rayop.controllers.kit.ownership import controller_reference
from rayop.controllers.rayservice import settings


def spec_hash(cluster_spec: Obj) -> str:
    """Returns KubeRay's hash of a ``rayClusterConfig`` (``suspend`` and scaling fields muted)."""
    return rayservice_cluster_hash(cluster_spec)


def goal_spec(rayservice: Obj) -> Obj:
    """Returns ``spec.rayClusterConfig`` of a stored RayService, raw (as the user wrote it)."""
    return (rayservice.get("spec") or {}).get("rayClusterConfig") or {}


def cluster_kuberay_version(cluster: Obj) -> str:
    """Returns the KubeRay version a cluster was built by (its annotation; "" when absent)."""
    annotations = (cluster.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(settings.KUBERAY_VERSION_ANNOTATION) or "")


def built_by_other_version(cluster: Obj) -> bool:
    """Tells whether ``ray.io/kuberay-version`` differs from ours (KubeRay's in-place path)."""
    return cluster_kuberay_version(cluster) != KUBERAY_VERSION


def cluster_hash(cluster: Obj) -> str:
    """Returns the spec hash a cluster was built from (its annotation; "" when absent)."""
    annotations = (cluster.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(settings.HASH_ANNOTATION) or "")


def num_worker_groups(cluster: Obj) -> int:
    """Returns the worker group count a cluster was built with (its annotation)."""
    annotations = (cluster.get("metadata") or {}).get("annotations") or {}
    try:
        return int(annotations.get(settings.NUM_WORKER_GROUPS_ANNOTATION) or -1)
    except ValueError:
        return -1


def matches_goal(cluster: Obj, goal: Obj) -> bool:
    """Tells whether the cluster was built from a spec equal to ``goal`` (up to scaling)."""
    return cluster_hash(cluster) == spec_hash(goal)


def only_appended_worker_groups(cluster: Obj, goal: Obj) -> bool:
    """Tells whether ``goal`` equals the cluster's spec plus worker groups appended at the end.

    As in KubeRay, a cluster whose ``ray.io/num-worker-groups`` is missing or not a count is
    updated in place too (KubeRay's partial comparison answers yes when it cannot parse it).
    """
    count = num_worker_groups(cluster)
    if count < 0:
        return True
    groups = list(goal.get("workerGroupSpecs") or [])
    if len(groups) <= count:
        return False
    truncated = {**dict(goal), "workerGroupSpecs": groups[:count]}
    return cluster_hash(cluster) == spec_hash(truncated)


def zero_downtime_enabled(spec: RayServiceSpec, options: OperatorOptions) -> bool:
    """Tells whether a spec change prepares a new cluster (upgradeStrategy, else the env gate).

    As KubeRay's ``isZeroDowntimeUpgradeEnabled``: NewCluster does, and so does
    NewClusterWithIncrementalUpgrade while the ``RayServiceIncrementalUpgrade`` gate is on.
    """
    strategy = spec.upgrade_strategy.type if spec.upgrade_strategy is not None else None
    if strategy:
        allowed = {RayServiceUpgradeType.NEW_CLUSTER}
        if options.feature_gates.ray_service_incremental_upgrade:
            allowed.add(RayServiceUpgradeType.NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE)
        return strategy in allowed
    return options.enable_zero_downtime


def new_cluster_name(service_name: str, rng: random.Random) -> str:
    """Returns ``<rayservice>-<5 random chars>``."""
    return f"{service_name}-{names.random_suffix(rng)}"


def cluster_annotations(service: RayService, goal: Obj) -> dict[str, str]:
    """Returns the annotations of a cluster built from ``goal``: the RayService's plus KubeRay's."""
    result = dict(service.metadata.get("annotations") or {})
    result.update(
        {
            settings.HASH_ANNOTATION: spec_hash(goal),
            settings.NUM_WORKER_GROUPS_ANNOTATION: str(len(goal.get("workerGroupSpecs") or [])),
            settings.KUBERAY_VERSION_ANNOTATION: KUBERAY_VERSION,
        }
    )
    return result


def build_ray_cluster(
    service: RayService, goal: Obj, cluster_name: str, *, drop_worker_replicas: bool = False
) -> dict[str, Any]:
    """Returns the RayCluster ``cluster_name`` of ``service`` with spec ``goal`` (raw).

    ``drop_worker_replicas``: leave every worker group's ``replicas`` unset, as KubeRay does for
    the new cluster of an incremental upgrade (it scales from ``minReplicas`` with Serve's
    ``target_capacity``).
    """
    cluster_labels = dict(service.metadata.get("labels") or {})
    cluster_labels[settings.ORIGINATED_FROM_CR_NAME] = names.check_label(service.name)
    cluster_labels[settings.ORIGINATED_FROM_CRD] = settings.OWNER_KIND
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": cluster_name,
            "namespace": service.namespace,
            "labels": cluster_labels,
            "annotations": cluster_annotations(service, goal),
            "ownerReferences": [controller_reference(service)],
        },
        "spec": _spec_copy(goal, drop_worker_replicas),
    }


def _spec_copy(goal: Obj, drop_worker_replicas: bool) -> dict[str, Any]:
    spec = copy.deepcopy(dict(goal))
    if drop_worker_replicas:
        for group in spec.get("workerGroupSpecs") or []:
            group.pop("replicas", None)
    return spec


def updated_in_place(
    cluster: Obj, service: RayService, goal: Obj, *, drop_worker_replicas: bool = False
) -> dict[str, Any]:
    """Returns ``cluster`` with spec ``goal``, its ``suspend`` kept, and the labels and
    annotations of a cluster built afresh (replacing the old ones wholesale, as KubeRay does)."""
    result = copy.deepcopy(dict(cluster))
    suspend = (result.get("spec") or {}).get("suspend")
    name = str(result["metadata"]["name"])
    built = build_ray_cluster(service, goal, name, drop_worker_replicas=drop_worker_replicas)
    result["spec"] = built["spec"]
    if suspend is not None:
        result["spec"]["suspend"] = suspend
    result["metadata"]["labels"] = built["metadata"]["labels"]
    result["metadata"]["annotations"] = built["metadata"]["annotations"]
    return result
