"""Reading a RayCluster: wire-object metadata, the parsed model, and what KubeRay derives from it.

The spec is read through :class:`rayop.api.raycluster.RayCluster` (parsed once per pass by the
RayCluster controller; :func:`parse_cluster` is the one conversion for callers that hold a wire
dict). The model carries KubeRay's defaults (``numOfHosts`` 1, ``maxReplicas`` 2**31-1...), so
nothing here repeats them; what remains are the rules KubeRay computes from several fields (the
desired pod count, whether GCS fault tolerance is on...). Metadata of any wire object (pods,
services, jobs) is read with :func:`meta`, :func:`name` and friends.
"""

from __future__ import annotations

from collections.abc import Mapping

from rayop.api import keys
from rayop.api.raycluster import (
    AuthMode,
    AutoscalerVersion,
    GcsFaultToleranceBackend,
    RayCluster,
    WorkerGroupSpec,
)
from rayop.apimachinery.objects import ObjView as Obj

DEFAULT_GCS_PORT = 6379
RAY_ORIGINATED_FROM_CRD_LABEL = keys.RAY_ORIGINATED_FROM_CRD
RAY_ORIGINATED_FROM_CR_NAME_LABEL = keys.RAY_ORIGINATED_FROM_CR_NAME
FT_ENABLED_ANNOTATION = keys.FT_ENABLED

ClusterLike = RayCluster | Obj
"""A parsed RayCluster, or its wire dict (parsed on the way in by :func:`parse_cluster`)."""


# -- metadata of any wire object ----------------------------------------------------------------


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


# -- the model ----------------------------------------------------------------------------------


def parse_cluster(cluster: ClusterLike) -> RayCluster:
    """Returns ``cluster`` as a model, parsing a wire dict (a model is returned as it is).

    Raises:
        pydantic.ValidationError: the dict is not a RayCluster.
    """
    return cluster if isinstance(cluster, RayCluster) else RayCluster.model_validate(cluster)


def cluster_namespace(rc: RayCluster) -> str:
    """Returns the RayCluster's namespace, ``default`` when empty (KubeRay's ``GetNamespace``)."""
    return rc.namespace or "default"


def annotation(rc: RayCluster, key: str) -> str | None:
    """Returns one annotation of the RayCluster, or None."""
    value = (rc.metadata.get("annotations") or {}).get(key)
    return None if value is None else str(value)


def template_spec(template: Obj) -> Obj:
    """Returns a pod template's ``spec`` or an empty mapping."""
    return template.get("spec") or {}


def ray_container_of(template: Obj) -> Obj:
    """Returns the Ray container (``containers[0]``) of a pod template (empty when none)."""
    containers = template_spec(template).get("containers") or [{}]
    return containers[0]  # type: ignore[no-any-return]


def head_port(rc: RayCluster) -> str:
    """Returns the GCS port workers connect to: head ``rayStartParams.port`` or 6379."""
    params = rc.spec.head_group_spec.ray_start_params or {}
    return str(params.get("port", DEFAULT_GCS_PORT))


def desired_worker_pods(group: WorkerGroupSpec) -> int:
    """Returns clamp(replicas, min, max) * numOfHosts, or 0 for a suspended group."""
    if group.suspend:
        return 0
    count = min(max(group.replicas, group.min_replicas), group.max_replicas)
    return count * group.num_of_hosts


def is_autoscaling_v2(rc: RayCluster) -> bool:
    """Tells whether autoscaling is on with ``autoscalerOptions.version: v2``."""
    return (
        bool(rc.spec.enable_in_tree_autoscaling) and autoscaler_version(rc) == AutoscalerVersion.V2
    )


def autoscaler_version(rc: RayCluster) -> str | None:
    """Returns ``spec.autoscalerOptions.version`` (``v1``/``v2``) or None when unset."""
    options = rc.spec.autoscaler_options
    return None if options is None else options.version


def is_gcs_ft_enabled(rc: RayCluster) -> bool:
    """Tells whether GCS FT is on (options set, or the legacy ``ray.io/ft-enabled`` annotation)."""
    legacy = (annotation(rc, FT_ENABLED_ANNOTATION) or "").lower() == "true"
    return legacy or rc.spec.gcs_fault_tolerance_options is not None


def is_gcs_ft_embedded(rc: RayCluster) -> bool:
    """Tells whether GCS FT uses the embedded RocksDB backend."""
    options = rc.spec.gcs_fault_tolerance_options
    return options is not None and options.backend == GcsFaultToleranceBackend.ROCKSDB


def gcs_storage_pvc_name(rc: RayCluster) -> str:
    """Returns the embedded-FT PVC name: ``storage.claimName`` or ``<cluster>-gcs-pvc``."""
    options = rc.spec.gcs_fault_tolerance_options
    storage = options.storage if options is not None else None
    claim = storage.claim_name if storage is not None else None
    return claim or f"{rc.name}-gcs-pvc"


def is_auth_enabled(cluster: ClusterLike) -> bool:
    """Tells whether Ray token auth is on (``authOptions.mode: token``)."""
    auth = parse_cluster(cluster).spec.auth_options
    return auth is not None and auth.mode == AuthMode.TOKEN


def is_k8s_token_auth(cluster: ClusterLike) -> bool:
    """Tells whether ``authOptions.enableK8sTokenAuth`` is true."""
    auth = parse_cluster(cluster).spec.auth_options
    return auth is not None and bool(auth.enable_k8s_token_auth)


def creator_crd(rc: RayCluster) -> str:
    """Returns the CRD that created the cluster (label ``ray.io/originated-from-crd``), else RayCluster."""
    value = (rc.metadata.get("labels") or {}).get(RAY_ORIGINATED_FROM_CRD_LABEL, "")
    return value if value in ("RayJob", "RayService") else "RayCluster"


def head_service_account_name(rc: RayCluster) -> str:
    """Returns the head template's ``serviceAccountName`` or the cluster name."""
    template = template_spec(rc.spec.head_group_spec.template)
    return str(template.get("serviceAccountName") or rc.name)


# -- wire-dict navigation, for callers that hold the dict (RayJob) ------------------------------


def spec(cluster: Obj) -> Obj:
    """Returns ``spec`` of a RayCluster wire dict, or an empty mapping."""
    return cluster.get("spec") or {}


def head_group(cluster: Obj) -> Obj:
    """Returns ``spec.headGroupSpec`` of a RayCluster wire dict, or an empty mapping."""
    return spec(cluster).get("headGroupSpec") or {}


def worker_groups(cluster: Obj) -> list[Obj]:
    """Returns ``spec.workerGroupSpecs`` of a RayCluster wire dict (possibly empty), in order."""
    return list(spec(cluster).get("workerGroupSpecs") or [])


def ray_container(group: Obj) -> Obj:
    """Returns the Ray container (``containers[0]``) of a wire group's template."""
    return ray_container_of(group.get("template") or {})


def is_group_suspended(group: Obj) -> bool:
    """Tells whether a wire worker group has ``suspend: true``."""
    return bool(group.get("suspend"))
