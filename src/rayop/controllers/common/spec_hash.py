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
import copy
import hashlib
import logging
from collections.abc import Mapping
from typing import Any

from rayop.controllers.common.go_json import GoJsonError, marshal_raycluster_spec

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
    """Returns a deep copy of ``spec`` without the fields KubeRay mutes before hashing."""
    result: dict[str, Any] = copy.deepcopy(dict(spec))
    result.pop("upgradeStrategy", None)
    head = result.get("headGroupSpec")
    if isinstance(head, dict):
        _mute_template(head)
    for group in result.get("workerGroupSpecs") or []:
        if not isinstance(group, dict):
            continue
        for key in WORKER_MUTED:
            group.pop(key, None)
        strategy = group.get("scaleStrategy")
        if isinstance(strategy, dict):
            strategy.pop("workersToDelete", None)
        _mute_template(group)
    return result


def rayservice_cluster_hash(cluster_config: Mapping[str, Any]) -> str:
    """Returns the hash a RayService stores on its clusters: ``rayClusterConfig`` without ``suspend``."""
    spec = {k: v for k, v in cluster_config.items() if k != "suspend"}
    return kuberay_spec_hash(spec)


def raycluster_pod_hash(spec: Mapping[str, Any]) -> str:
    """Returns the head pods' recreate hash: the spec with absent ``rayStartParams`` as ``{}``."""
    result: dict[str, Any] = copy.deepcopy(dict(spec))
    groups = [result.get("headGroupSpec"), *(result.get("workerGroupSpecs") or [])]
    for group in groups:
        if isinstance(group, dict) and group.get("rayStartParams") is None:
            group["rayStartParams"] = {}
    return kuberay_spec_hash(result)


def _mute_template(group: dict[str, Any]) -> None:
    spec = (group.get("template") or {}).get("spec")
    if isinstance(spec, dict):
        for key in TEMPLATE_MUTED:
            spec.pop(key, None)


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
