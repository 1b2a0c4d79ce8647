"""Read-only accessors over a RayCluster wire dict, with KubeRay's defaults applied.

The controller reads RayClusters from the informer cache as plain dicts
(``obj["spec"]["headGroupSpec"]["rayStartParams"]``); every builder in this package goes through
these helpers so that defaults (``numOfHosts`` 1, ``maxReplicas`` 2**31-1, a missing
``rayStartParams`` meaning ``{}``) are applied in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rayop.api import keys

MAX_INT32 = 2**31 - 1
DEFAULT_GCS_PORT = 6379
RAY_ORIGINATED_FROM_CRD_LABEL = keys.RAY_ORIGINATED_FROM_CRD
RAY_ORIGINATED_FROM_CR_NAME_LABEL = keys.RAY_ORIGINATED_FROM_CR_NAME
FT_ENABLED_ANNOTATION = keys.FT_ENABLED

Obj = Mapping[str, Any]


def meta(obj: Obj) -> Obj:
    """Returns ``obj.metadata`` or an empty mapping."""
    return obj.get("metadata") or {}


def name(obj: Obj) -> str:
    """Returns ``metadata.name``."""
    return str(meta(obj).get("name", ""))


def namespace(obj: Obj) -> str:
    """Returns ``metadata.namespace``, ``default`` when empty (KubeRay's ``GetNamespace``)."""
    return str(meta(obj).get("namespace") or "default")


def labels_of(obj: Obj) -> Mapping[str, str]:
    """Returns ``metadata.labels`` or an empty mapping."""
    return meta(obj).get("labels") or {}


def annotations_of(obj: Obj) -> Mapping[str, str]:
    """Returns ``metadata.annotations`` or an empty mapping."""
    return meta(obj).get("annotations") or {}


def spec(cluster: Obj) -> Obj:
    """Returns ``spec`` or an empty mapping."""
    return cluster.get("spec") or {}


def head_group(cluster: Obj) -> Obj:
    """Returns ``spec.headGroupSpec`` or an empty mapping."""
    return spec(cluster).get("headGroupSpec") or {}


def worker_groups(cluster: Obj) -> list[Obj]:
    """Returns ``spec.workerGroupSpecs`` (possibly empty), in spec order."""
    return list(spec(cluster).get("workerGroupSpecs") or [])


def ray_start_params(group: Obj) -> dict[str, str]:
    """Returns a fresh copy of a group's ``rayStartParams`` (``{}`` when missing)."""
    return {str(k): str(v) for k, v in (group.get("rayStartParams") or {}).items()}


def template_spec(group: Obj) -> Obj:
    """Returns a group's ``template.spec`` or an empty mapping."""
    return (group.get("template") or {}).get("spec") or {}


def ray_container(group: Obj) -> Obj:
    """Returns the Ray container (``containers[0]``) of a group's template."""
    containers = template_spec(group).get("containers") or [{}]
    return containers[0]  # type: ignore[no-any-return]


def head_port(cluster: Obj) -> str:
    """Returns the GCS port workers connect to: head ``rayStartParams.port`` or 6379."""
    return str(ray_start_params(head_group(cluster)).get("port", DEFAULT_GCS_PORT))


def num_of_hosts(group: Obj) -> int:
    """Returns ``numOfHosts``, treating a missing or non-positive value as 1."""
    value = int(group.get("numOfHosts") or 1)
    return max(value, 1)


def is_group_suspended(group: Obj) -> bool:
    """Tells whether a worker group has ``suspend: true``."""
    return bool(group.get("suspend"))


def min_replicas(group: Obj) -> int:
    """Returns ``minReplicas`` (default 0)."""
    return int(group.get("minReplicas") or 0)


def max_replicas(group: Obj) -> int:
    """Returns ``maxReplicas`` (default 2**31-1)."""
    value = group.get("maxReplicas")
    return MAX_INT32 if value is None else int(value)


def desired_worker_pods(group: Obj) -> int:
    """Returns clamp(replicas, min, max) * numOfHosts, or 0 for a suspended group."""
    if is_group_suspended(group):
        return 0
    lo, hi = min_replicas(group), max_replicas(group)
    replicas = group.get("replicas")
    if replicas is None or int(replicas) < lo:
        count = lo
    elif int(replicas) > hi:
        count = hi
    else:
        count = int(replicas)
    return count * num_of_hosts(group)


def is_autoscaling_enabled(cluster: Obj) -> bool:
    """Tells whether ``spec.enableInTreeAutoscaling`` is true."""
    return bool(spec(cluster).get("enableInTreeAutoscaling"))


def autoscaler_version(cluster: Obj) -> str | None:
    """Returns ``spec.autoscalerOptions.version`` (``v1``/``v2``) or None when unset."""
    value = (spec(cluster).get("autoscalerOptions") or {}).get("version")
    return None if value is None else str(value)


def is_autoscaling_v2(cluster: Obj) -> bool:
    """Tells whether autoscaling is on with ``autoscalerOptions.version: v2``."""
    return is_autoscaling_enabled(cluster) and autoscaler_version(cluster) == "v2"


def gcs_ft_options(cluster: Obj) -> Obj | None:
    """Returns ``spec.gcsFaultToleranceOptions`` or None."""
    value = spec(cluster).get("gcsFaultToleranceOptions")
    return None if value is None else value


def is_gcs_ft_enabled(cluster: Obj) -> bool:
    """Tells whether GCS FT is on (options set, or the legacy ``ray.io/ft-enabled`` annotation)."""
    legacy = annotations_of(cluster).get(FT_ENABLED_ANNOTATION, "").lower() == "true"
    return legacy or gcs_ft_options(cluster) is not None


def is_gcs_ft_embedded(cluster: Obj) -> bool:
    """Tells whether GCS FT uses the embedded RocksDB backend."""
    options = gcs_ft_options(cluster)
    return options is not None and (options.get("backend") or "redis") == "rocksdb"


def gcs_storage_pvc_name(cluster: Obj) -> str:
    """Returns the embedded-FT PVC name: ``storage.claimName`` or ``<cluster>-gcs-pvc``."""
    storage = (gcs_ft_options(cluster) or {}).get("storage") or {}
    return str(storage.get("claimName") or f"{name(cluster)}-gcs-pvc")


def auth_options(cluster: Obj) -> Obj:
    """Returns ``spec.authOptions`` or an empty mapping."""
    return spec(cluster).get("authOptions") or {}


def is_auth_enabled(cluster: Obj) -> bool:
    """Tells whether Ray token auth is on (``authOptions.mode: token``)."""
    return auth_options(cluster).get("mode") == "token"


def is_k8s_token_auth(cluster: Obj) -> bool:
    """Tells whether ``authOptions.enableK8sTokenAuth`` is true."""
    return bool(auth_options(cluster).get("enableK8sTokenAuth"))


def creator_crd(cluster: Obj) -> str:
    """Returns the CRD that created the cluster (label ``ray.io/originated-from-crd``), else RayCluster."""
    value = labels_of(cluster).get(RAY_ORIGINATED_FROM_CRD_LABEL, "")
    return value if value in ("RayJob", "RayService") else "RayCluster"


def head_service_account_name(cluster: Obj) -> str:
    """Returns the head template's ``serviceAccountName`` or the cluster name."""
    return str(template_spec(head_group(cluster)).get("serviceAccountName") or name(cluster))
