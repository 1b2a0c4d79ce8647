"""KubeRay v1.7.0's checks of ``spec.historyServerOptions`` (gate ``RayClusterHistoryServer``).

The collector sidecar needs an image and a storage backend it can write to; the variables
KubeRay injects into it must not be set by the user; and no pod template may already have a
container named ``ray-history-collector``. Messages are KubeRay's, in its order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from rayop.api.raycluster import CollectorOptions, RayClusterSpec
from rayop.api.validation.pod_template import containers

__all__ = ["COLLECTOR_CONTAINER_NAME", "MANAGED_COLLECTOR_ENV", "history_server_problem"]

COLLECTOR_CONTAINER_NAME: Final = "ray-history-collector"
STORAGE_BACKEND: Final = "STORAGE_BACKEND"
MANAGED_COLLECTOR_ENV: Final = (
    "POD_IP",
    "FQ_RAY_IP",
    "RAY_CLUSTER_NAME",
    "RAY_CLUSTER_NAMESPACE",
    "RAY_ROLE",
    "OWNER_KIND",
    "OWNER_NAME",
    "EVENTS_PORT",
)
"""Variables KubeRay sets on the collector itself; the user may not set them."""

_CONNECTION_STRING: Final = "AZURE_STORAGE_CONNECTION_STRING"
_ACCOUNT_URL: Final = "AZURE_STORAGE_ACCOUNT_URL"
_AUTH_MODE: Final = "AZURE_STORAGE_AUTH_MODE"


def _env_by_name(options: CollectorOptions) -> dict[str, Mapping[str, Any]]:
    return {str(e.get("name", "")): e for e in options.env or () if isinstance(e, Mapping)}


def _has_value(env: Mapping[str, Mapping[str, Any]], name: str) -> bool:
    var = env.get(name)
    return var is not None and (bool(var.get("value")) or var.get("valueFrom") is not None)


def _azure_problem(env: Mapping[str, Mapping[str, Any]]) -> str:
    mode_var = env.get(_AUTH_MODE)
    mode = str(mode_var.get("value") or "").strip().lower() if mode_var else ""
    if mode == "connection_string":
        if not _has_value(env, _CONNECTION_STRING):
            return (
                f"{_CONNECTION_STRING} environment variable must be set when {STORAGE_BACKEND} "
                f"is AZUREBLOB and {_AUTH_MODE} is connection_string"
            )
        return ""
    if mode in ("workload_identity", "default"):
        if not _has_value(env, _ACCOUNT_URL):
            return (
                f"{_ACCOUNT_URL} environment variable must be set when {STORAGE_BACKEND} is "
                f"AZUREBLOB and {_AUTH_MODE} is {mode}"
            )
        return ""
    if not _has_value(env, _CONNECTION_STRING) and not _has_value(env, _ACCOUNT_URL):
        return (
            f"either {_CONNECTION_STRING} or {_ACCOUNT_URL} environment variable must be set "
            f"when {STORAGE_BACKEND} is AZUREBLOB"
        )
    return ""


_REQUIRED_BY_BACKEND: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    "GCS": (("GCS_BUCKET", "GCS"),),
    "S3": (("S3_REGION", "S3"),),
    "ALIYUNOSS": (
        ("OSS_BUCKET", "ALIYUNOSS"),
        ("OSS_ENDPOINT", "ALIYUNOSS"),
        ("OSS_REGION", "ALIYUNOSS"),
    ),
}


def collector_options_problem(options: CollectorOptions) -> str:
    """Returns KubeRay's ``validateCollectorOptions`` message for ``options``, else ""."""
    if not options.image:
        return "historyServerOptions.collectorOptions.image must be set"
    env = _env_by_name(options)
    for name in MANAGED_COLLECTOR_ENV:
        if name in env:
            return (
                f"historyServerOptions.collectorOptions.env must not contain {name}: it is "
                "managed by KubeRay and injected automatically into the collector container"
            )
    backend_var = env.get(STORAGE_BACKEND)
    backend = str(backend_var.get("value") or "") if backend_var else ""
    if not backend:
        return (
            f"{STORAGE_BACKEND} environment variable must be set with a literal string value in "
            "historyServerOptions.collectorOptions.env"
        )
    kind = backend.upper()
    if kind == "AZUREBLOB":
        return _azure_problem(env)
    for name, shown in _REQUIRED_BY_BACKEND.get(kind, ()):
        if not _has_value(env, name):
            return f"{name} environment variable must be set when {STORAGE_BACKEND} is {shown}"
    return ""


def history_server_problem(spec: RayClusterSpec) -> str:
    """Returns KubeRay's message for the first ``historyServerOptions`` check failed, else "".

    Call it only with the gate on (the gate check words the refusal otherwise).
    """
    options = spec.history_server_options
    if options is None:
        return ""
    if options.collector_options is None:
        return "historyServerOptions.collectorOptions must be set"
    if problem := collector_options_problem(options.collector_options):
        return problem
    for container in containers(spec.head_group_spec.template):
        if container.get("name") == COLLECTOR_CONTAINER_NAME:
            return (
                f"head pod template must not define a container with name "
                f"'{COLLECTOR_CONTAINER_NAME}' when history server collector options are enabled"
            )
    for group in spec.worker_group_specs or ():
        for container in containers(group.template):
            if container.get("name") == COLLECTOR_CONTAINER_NAME:
                return (
                    f"worker group {group.group_name} pod template must not define a container "
                    f"with name '{COLLECTOR_CONTAINER_NAME}' when history server collector "
                    "options are enabled"
                )
    return ""
