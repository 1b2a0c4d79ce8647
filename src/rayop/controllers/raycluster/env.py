"""Environment variables KubeRay injects into Ray containers.

KubeRay v1.7.0: ``setContainerEnvVars`` and its neighbours in
``ray-operator/controllers/ray/common/pod.go``.

Every function here mutates a container dict that belongs to a pod being built (never a cached
object). Most variables are added only when the user has not set them; the ones KubeRay manages
itself (``RAY_CLUSTER_NAME``, ``KUBERAY_GEN_RAY_START_CMD``, ...) are always appended.
"""

from __future__ import annotations

from typing import Any

from rayop.api import keys
from rayop.api.raycluster import RayCluster, RedisCredential
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.config.options import KUBERAY_VERSION
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.kit import names
from rayop.controllers.kit.auth_token import AUTH_TOKEN_SECRET_KEY
from rayop.controllers.kit.cluster_access import ClusterLike

Container = dict[str, Any]
LOCAL_HOST = "127.0.0.1"
GCS_STORAGE_VOLUME = "gcs-storage"
GCS_STORAGE_MOUNT_PATH = "/data/gcs"
RAY_TOKEN_VOLUME = "ray-token"
RAY_TOKEN_MOUNT_PATH = "/var/run/secrets/ray.io/serviceaccount"


def has_env(container: Obj, env_name: str) -> bool:
    """Tells whether the container already sets ``env_name``."""
    return any(e.get("name") == env_name for e in container.get("env") or [])


def _env_list(container: Container) -> list[dict[str, Any]]:
    env = container.get("env")
    if env is None:
        env = container["env"] = []
    return env


def append_env(container: Container, env_name: str, value: str) -> None:
    """Appends ``name=value`` unconditionally (an empty value is omitted, as Go serialises it)."""
    entry: dict[str, Any] = {"name": env_name}
    if value:
        entry["value"] = value
    _env_list(container).append(entry)


def append_env_if_absent(container: Container, env_name: str, value: str) -> None:
    """Appends ``name=value`` unless the container already sets ``name``."""
    if not has_env(container, env_name):
        append_env(container, env_name, value)


def field_ref_env(env_name: str, field_path: str) -> dict[str, Any]:
    """Returns an env var taken from a pod field (``valueFrom.fieldRef``)."""
    return {"name": env_name, "valueFrom": {"fieldRef": {"fieldPath": field_path}}}


def _env_from_option(env_name: str, option: RedisCredential) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": env_name}
    if option.value:
        entry["value"] = option.value
    if option.value_from is not None:
        entry["valueFrom"] = option.value_from
    return entry


def add_gcs_ft_env(
    rc: RayCluster, node_type: str, container: Container, pod: dict[str, Any], params: Obj
) -> None:
    """Adds the GCS fault-tolerance env vars, annotations and (embedded FT) PVC volume.

    ``pod`` is the pod (template) dict whose annotations and volumes may change; ``params`` are
    the head's completed ``rayStartParams`` (for a ``redis-password`` set there directly).
    """
    enabled = cs.is_gcs_ft_enabled(rc)
    annotations = pod.setdefault("metadata", {}).setdefault("annotations", {})
    if node_type == "head":
        annotations[keys.FT_ENABLED] = "true" if enabled else "false"
    if not enabled:
        return
    if node_type == "worker":
        append_env_if_absent(container, "RAY_gcs_rpc_server_reconnect_timeout_s", "600")
        return
    if cs.is_gcs_ft_embedded(rc):
        _add_embedded_ft(rc, container, pod)
    else:
        _add_redis_ft(rc, container, annotations, params)


def _add_redis_ft(
    rc: RayCluster, container: Container, annotations: dict[str, str], params: Obj
) -> None:
    options = rc.spec.gcs_fault_tolerance_options
    custom_ns = cs.annotation(rc, keys.EXTERNAL_STORAGE_NAMESPACE)
    storage_ns = str(rc.metadata.get("uid") or "") if custom_ns is None else custom_ns
    if options is not None and options.external_storage_namespace:
        storage_ns = options.external_storage_namespace
    annotations[keys.EXTERNAL_STORAGE_NAMESPACE] = storage_ns
    append_env_if_absent(container, "RAY_external_storage_namespace", storage_ns)
    if options is None:
        if not has_env(container, "REDIS_PASSWORD") and "redis-password" in params:
            append_env(container, "REDIS_PASSWORD", str(params["redis-password"]))
        return
    append_env(container, "RAY_REDIS_ADDRESS", options.redis_address or "")
    if options.redis_username is not None:
        _env_list(container).append(_env_from_option("REDIS_USERNAME", options.redis_username))
    if options.redis_password is not None:
        _env_list(container).append(_env_from_option("REDIS_PASSWORD", options.redis_password))


def _add_embedded_ft(rc: RayCluster, container: Container, pod: dict[str, Any]) -> None:
    append_env_if_absent(container, "RAY_gcs_storage", "rocksdb")
    append_env_if_absent(container, "RAY_gcs_storage_path", GCS_STORAGE_MOUNT_PATH)
    options = rc.spec.gcs_fault_tolerance_options
    storage = options.storage if options is not None else None
    mount: dict[str, Any] = {"name": GCS_STORAGE_VOLUME, "mountPath": GCS_STORAGE_MOUNT_PATH}
    if storage is not None and storage.sub_path:
        mount["subPath"] = storage.sub_path
    container.setdefault("volumeMounts", []).append(mount)
    pod.setdefault("spec", {}).setdefault("volumes", []).append(
        {
            "name": GCS_STORAGE_VOLUME,
            "persistentVolumeClaim": {"claimName": cs.gcs_storage_pvc_name(rc)},
        }
    )


def add_auth_env(cluster: ClusterLike, container: Container) -> None:
    """Adds ``RAY_AUTH_MODE`` and the token (secretKeyRef) or K8s-token-auth settings."""
    rc = cs.parse_cluster(cluster)
    append_env_if_absent(container, "RAY_AUTH_MODE", "token")
    if cs.is_k8s_token_auth(rc):
        append_env_if_absent(container, "RAY_ENABLE_K8S_TOKEN_AUTH", "true")
        mounts = container.setdefault("volumeMounts", [])
        if not any(m.get("name") == RAY_TOKEN_VOLUME for m in mounts):
            mounts.append(
                {"name": RAY_TOKEN_VOLUME, "mountPath": RAY_TOKEN_MOUNT_PATH, "readOnly": True}
            )
        return
    if not has_env(container, "RAY_AUTH_TOKEN"):
        secret = {"name": names.auth_secret_name(rc), "key": AUTH_TOKEN_SECRET_KEY}
        _env_list(container).append(
            {"name": "RAY_AUTH_TOKEN", "valueFrom": {"secretKeyRef": secret}}
        )


def add_ray_token_volume(pod_spec: dict[str, Any]) -> None:
    """Adds the projected service-account token volume used by K8s token auth (once)."""
    volumes = pod_spec.setdefault("volumes", [])
    if not any(v.get("name") == RAY_TOKEN_VOLUME for v in volumes):
        projection = {"serviceAccountToken": {"path": "token"}}
        volumes.append({"name": RAY_TOKEN_VOLUME, "projected": {"sources": [projection]}})


def add_init_container_env(container: Container, fqdn: str) -> None:
    """Appends ``FQ_RAY_IP`` and ``RAY_IP`` (every init container of head and worker pods)."""
    append_env(container, "FQ_RAY_IP", fqdn)
    append_env(container, "RAY_IP", names.short_name_from_fqdn(fqdn))


def add_ray_container_env(
    container: Container,
    *,
    node_type: str,
    fqdn: str,
    head_port: str,
    ray_start_cmd: str,
    creator_crd: str,
) -> None:
    """Adds the env vars KubeRay sets on every Ray container, in KubeRay's order."""
    ip = LOCAL_HOST
    if node_type == "worker":
        ip = fqdn
        add_init_container_env(container, fqdn)
    env = _env_list(container)
    env.append(field_ref_env("RAY_CLUSTER_NAME", "metadata.labels['ray.io/cluster']"))
    env.append(field_ref_env("RAY_CLUSTER_NAMESPACE", "metadata.namespace"))
    env.append(field_ref_env("RAY_CLOUD_INSTANCE_ID", "metadata.name"))
    env.append(field_ref_env("RAY_NODE_TYPE_NAME", "metadata.labels['ray.io/group']"))
    append_env(container, "KUBERAY_GEN_RAY_START_CMD", ray_start_cmd)
    append_env_if_absent(container, "RAY_PORT", head_port)
    if creator_crd == "RayService":
        append_env_if_absent(container, "RAY_timeout_ms_task_wait_for_death_info", "0")
        append_env_if_absent(container, "RAY_gcs_server_request_timeout_seconds", "5")
        append_env_if_absent(container, "RAY_SERVE_KV_TIMEOUT_S", "5")
    append_env_if_absent(container, "RAY_ADDRESS", f"{ip}:{head_port}")
    append_env_if_absent(container, "RAY_USAGE_STATS_KUBERAY_IN_USE", "1")
    if node_type == "head":
        tags = f"kuberay_version={KUBERAY_VERSION};kuberay_crd={creator_crd}"
        append_env(container, "RAY_USAGE_STATS_EXTRA_TAGS", tags)
    append_env_if_absent(container, "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE", "1")
