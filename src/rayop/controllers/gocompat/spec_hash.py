"""KubeRay's RayCluster spec hash (``GenerateHashWithoutReplicasAndWorkersToDelete``), bit for bit.

KubeRay v1.7.0 stores this hash in two places: on a RayService's RayClusters
(``ray.io/hash-without-replicas-and-workers-to-delete``: has ``rayClusterConfig`` changed?) and
on head pods (``ray.io/upgrade-strategy-recreate-hash``: are the pods stale for
``upgradeStrategy: Recreate``?). It is SHA-1 over Go's ``json.Marshal`` of the typed
``RayClusterSpec`` after muting what scaling and external schedulers change: every worker
group's ``replicas``, ``minReplicas``, ``maxReplicas`` and ``scaleStrategy.workersToDelete``,
the ``tolerations`` and ``schedulingGates`` of the head and worker pod templates, and
``upgradeStrategy``; the digest is written in base32 with the extended-hex alphabet, padded.

rayop computes the same bytes from the stored wire dict (:mod:`go_json`), so a takeover in
either direction sees equal hashes and changes nothing. Callers apply KubeRay's own pre-steps:
the RayService controller hashes ``rayClusterConfig`` with ``suspend`` muted too
(:func:`rayservice_cluster_hash`); the RayCluster controller hashes the spec after defaulting a
missing ``rayStartParams`` to ``{}`` (:func:`raycluster_pod_hash`).
"""

from __future__ import annotations

import base64
import hashlib
import logging
from collections.abc import Callable, Mapping
from typing import Any

from rayop.controllers.gocompat.go_json import GoJsonError, marshal_raycluster_spec

log = logging.getLogger(__name__)

WORKER_MUTED = ("replicas", "minReplicas", "maxReplicas")
TEMPLATE_MUTED = ("tolerations", "schedulingGates")


def kuberay_spec_hash(spec: Mapping[str, Any]) -> str:
    """Returns KubeRay's hash of a RayClusterSpec wire dict (the muted fields left out).

    A spec Go's decoder would refuse (a value of the wrong type) is hashed with that value as
    plain JSON, and a warning names it: KubeRay cannot read such an object at all.
    """
    return _digest(muted_spec(spec))


def muted_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Returns ``spec`` without the fields KubeRay mutes before hashing (``spec`` is not changed).

    Only the mappings on the way to a muted field are copied; the rest is shared.
    """
    kept = {k: v for k, v in spec.items() if k != "upgradeStrategy"}
    return _with_groups(kept, head=_muted_template, worker=_muted_worker)


def _with_groups(
    spec: Mapping[str, Any],
    *,
    head: Callable[[Mapping[str, Any]], Any],
    worker: Callable[[Any], Any],
) -> dict[str, Any]:
    """Returns a copy of ``spec`` whose head group (a mapping) is ``head(group)`` and whose
    worker groups (a list) are ``worker(group)`` each; other values are left as they are."""
    result = dict(spec)
    group = result.get("headGroupSpec")
    if isinstance(group, Mapping):
        result["headGroupSpec"] = head(group)
    groups = result.get("workerGroupSpecs")
    if isinstance(groups, list):
        result["workerGroupSpecs"] = [worker(g) for g in groups]
    return result


def _muted_worker(group: Any) -> Any:
    if not isinstance(group, Mapping):
        return group
    result = {k: v for k, v in group.items() if k not in WORKER_MUTED}
    strategy = result.get("scaleStrategy")
    if isinstance(strategy, Mapping):
        result["scaleStrategy"] = {k: v for k, v in strategy.items() if k != "workersToDelete"}
    return _muted_template(result)


def _muted_template(group: Mapping[str, Any]) -> dict[str, Any]:
    result = dict(group)
    template = result.get("template")
    if isinstance(template, Mapping) and isinstance(template.get("spec"), Mapping):
        pod_spec = {k: v for k, v in template["spec"].items() if k not in TEMPLATE_MUTED}
        result["template"] = {**template, "spec": pod_spec}
    return result


def rayservice_cluster_hash(cluster_config: Mapping[str, Any]) -> str:
    """Returns the hash a RayService stores on its clusters: ``rayClusterConfig`` without ``suspend``."""
    spec = {k: v for k, v in cluster_config.items() if k != "suspend"}
    return kuberay_spec_hash(spec)


def raycluster_pod_hash(spec: Mapping[str, Any]) -> str:
    """Returns the head pods' recreate hash: the spec with absent ``rayStartParams`` as ``{}``."""
    filled = _with_groups(spec, head=_with_ray_start_params, worker=_with_ray_start_params)
    return kuberay_spec_hash(filled)


def _with_ray_start_params(group: Any) -> Any:
    if not isinstance(group, Mapping) or group.get("rayStartParams") is not None:
        return group
    return {**group, "rayStartParams": {}}


def _digest(spec: Mapping[str, Any]) -> str:
    try:
        text = marshal_raycluster_spec(spec)
    except GoJsonError as err:
        log.warning(
            "spec hash: KubeRay's Go types cannot hold the spec (%s); hashing it as is", err
        )
        text = marshal_raycluster_spec(spec, lenient=True)
    payload = text.encode()
    digest = hashlib.sha1(payload, usedforsecurity=False).digest()
    return base64.b32hexencode(digest).decode()
