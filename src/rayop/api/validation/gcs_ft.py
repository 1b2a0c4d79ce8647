"""KubeRay v1.7's checks of GCS fault tolerance (part of ``ValidateRayClusterSpec``).

The ``ray.io/ft-enabled`` annotation against ``gcsFaultToleranceOptions``, Redis settings made
in ``rayStartParams`` or the head's env instead of the options, and the backend rules
(``validateGcsFaultToleranceBackend``): the embedded RocksDB backend takes no Redis settings and
owns its env, volume and mount; the Redis backend takes no ``storage``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from rayop.api import keys
from rayop.api.raycluster import GcsFaultToleranceBackend, RayClusterSpec
from rayop.api.validation.gates import Gates, gate_on
from rayop.api.validation.pod_template import env_var, template_spec

__all__ = ["RAY_REDIS_ADDRESS", "gcs_ft_problem"]

RAY_REDIS_ADDRESS: Final = "RAY_REDIS_ADDRESS"
REDIS_PASSWORD: Final = "REDIS_PASSWORD"
REDIS_USERNAME: Final = "REDIS_USERNAME"
RAY_GCS_STORAGE: Final = "RAY_gcs_storage"
RAY_GCS_STORAGE_PATH: Final = "RAY_gcs_storage_path"
GCS_STORAGE_VOLUME: Final = "gcs-storage"
GCS_STORAGE_MOUNT_PATH: Final = "/data/gcs"


def gcs_ft_problem(
    spec: RayClusterSpec,
    annotations: Mapping[str, str],
    head_env: Sequence[Mapping[str, Any]],
    head_container: Mapping[str, Any],
    gates: Gates | None,
) -> str | None:
    options = spec.gcs_fault_tolerance_options
    if annotations.get(keys.FT_ENABLED) and options is not None:
        return (
            f"{keys.FT_ENABLED} annotation and GcsFaultToleranceOptions are both set. "
            "Please use only GcsFaultToleranceOptions to configure GCS fault tolerance"
        )
    ft_annotation = str(annotations.get(keys.FT_ENABLED, "")).lower() == "true"
    if not ft_annotation and options is None and env_var(RAY_REDIS_ADDRESS, head_env):
        return (
            f"{RAY_REDIS_ADDRESS} is set which implicitly enables GCS fault tolerance, but "
            "GcsFaultToleranceOptions is not set. Please set GcsFaultToleranceOptions to "
            "enable GCS fault tolerance"
        )
    if options is not None:
        use = "use GcsFaultToleranceOptions"
        if (spec.head_group_spec.ray_start_params or {}).get("redis-password"):
            return (
                "cannot set `redis-password` in rayStartParams when GcsFaultToleranceOptions "
                f"is enabled - {use}.RedisPassword instead"
            )
        if env_var(REDIS_PASSWORD, head_env):
            return (
                "cannot set `REDIS_PASSWORD` env var in head Pod when GcsFaultToleranceOptions "
                f"is enabled - {use}.RedisPassword instead"
            )
        if env_var(RAY_REDIS_ADDRESS, head_env):
            return (
                "cannot set `RAY_REDIS_ADDRESS` env var in head Pod when "
                f"GcsFaultToleranceOptions is enabled - {use}.RedisAddress instead"
            )
        if annotations.get(keys.EXTERNAL_STORAGE_NAMESPACE):
            return (
                "cannot set `ray.io/external-storage-namespace` annotation when "
                f"GcsFaultToleranceOptions is enabled - {use}.ExternalStorageNamespace instead"
            )
        backend = _backend_problem(spec, head_env, head_container, gates)
        if backend is not None:
            return backend
    if (spec.head_group_spec.ray_start_params or {}).get("redis-username") or env_var(
        REDIS_USERNAME, head_env
    ):
        return (
            "cannot set redis username in rayStartParams or environment variables - use "
            "GcsFaultToleranceOptions.RedisUsername instead"
        )
    return None


def _backend_problem(
    spec: RayClusterSpec,
    head_env: Sequence[Mapping[str, Any]],
    head_container: Mapping[str, Any],
    gates: Gates | None,
) -> str | None:
    options = spec.gcs_fault_tolerance_options
    assert options is not None
    if options.backend != GcsFaultToleranceBackend.ROCKSDB:
        if options.storage is not None:
            return (
                "cannot set GcsFaultToleranceOptions.Storage when backend is 'redis' - it only "
                "applies to the 'rocksdb' backend"
            )
        return None
    if not gate_on(gates, "GCSFaultToleranceEmbeddedStorage"):
        return ""
    for wire, value in (
        ("RedisAddress", options.redis_address or None),
        ("RedisUsername", options.redis_username),
        ("RedisPassword", options.redis_password),
        ("ExternalStorageNamespace", options.external_storage_namespace or None),
    ):
        if value is not None:
            return f"cannot set GcsFaultToleranceOptions.{wire} when backend is 'rocksdb'"
    storage = options.storage
    if (
        storage is not None
        and storage.claim_name
        and (
            storage.size is not None
            or storage.storage_class_name is not None
            or storage.access_modes
        )
    ):
        return (
            "GcsFaultToleranceOptions.Storage.ClaimName is mutually exclusive with size, "
            "storageClassName, and accessModes"
        )
    if env_var(RAY_GCS_STORAGE, head_env) or env_var(RAY_GCS_STORAGE_PATH, head_env):
        return (
            f"cannot set `{RAY_GCS_STORAGE}` or `{RAY_GCS_STORAGE_PATH}` env var in head Pod "
            "when the embedded GCS FT backend is used - these are managed by KubeRay"
        )
    mounts = head_container.get("volumeMounts")
    for mount in mounts if isinstance(mounts, list) else ():
        if isinstance(mount, Mapping) and (
            mount.get("mountPath") == GCS_STORAGE_MOUNT_PATH
            or mount.get("name") == GCS_STORAGE_VOLUME
        ):
            return (
                f'cannot set a volume mount named "{GCS_STORAGE_VOLUME}" or mounted at '
                f"{GCS_STORAGE_MOUNT_PATH} in the head container when the embedded GCS FT "
                "backend is used - it is managed by KubeRay"
            )
    volumes = template_spec(spec.head_group_spec.template).get("volumes")
    for volume in volumes if isinstance(volumes, list) else ():
        if isinstance(volume, Mapping) and volume.get("name") == GCS_STORAGE_VOLUME:
            return (
                f'cannot set a volume named "{GCS_STORAGE_VOLUME}" in the head Pod when the '
                "embedded GCS FT backend is used - it is managed by KubeRay"
            )
    return None
