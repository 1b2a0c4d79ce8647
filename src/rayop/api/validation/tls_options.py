"""KubeRay v1.7.0's ``validateTLSOptions``: what a spec with mTLS on may not set itself.

With ``tlsOptions.enabled: true`` (and the ``RayClusterMTLS`` gate on) the operator manages
``RAY_USE_TLS``, ``RAY_TLS_SERVER_CERT``, ``RAY_TLS_SERVER_KEY``, ``RAY_TLS_CA_CERT`` and the
``ray-tls`` mount at ``/etc/ray/tls``: the head's and each worker group's Ray container, and
``autoscalerOptions``, may set none of them. Messages are KubeRay's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from rayop.api.raycluster import RayClusterSpec
from rayop.api.validation.pod_template import containers, env, env_var

__all__ = ["TLS_ENV_NAMES", "tls_options_problem"]

TLS_ENV_NAMES: Final = (
    "RAY_USE_TLS",
    "RAY_TLS_SERVER_CERT",
    "RAY_TLS_SERVER_KEY",
    "RAY_TLS_CA_CERT",
)
_VOLUME: Final = "ray-tls"
_PATH: Final = "/etc/ray/tls"
_MANAGED: Final = "- the operator manages TLS configuration automatically"


def _mounts(items: Any) -> list[Mapping[str, Any]]:
    return [m for m in items if isinstance(m, Mapping)] if isinstance(items, list) else []


def _mount_problem(mounts: Sequence[Mapping[str, Any]], where: str) -> str | None:
    for mount in mounts:
        if mount.get("name") == _VOLUME:
            return f'cannot use volume mount named "{_VOLUME}" in {where} when tlsOptions is set {_MANAGED}'
        if mount.get("mountPath") == _PATH:
            return f'cannot use volume mount at path "{_PATH}" in {where} when tlsOptions is set {_MANAGED}'
    return None


def _container_problem(container: Mapping[str, Any], where: str) -> str | None:
    entries = env(container)
    for name in TLS_ENV_NAMES:
        if env_var(name, entries) is not None:
            return f"cannot set {name} environment variable in {where} when tlsOptions is set {_MANAGED}"
    return _mount_problem(_mounts(container.get("volumeMounts")), where)


def tls_options_problem(spec: RayClusterSpec) -> str | None:
    """Returns KubeRay's message for the first TLS setting the spec may not set, or None.

    Call it only when TLS is on (gate on and ``tlsOptions.enabled: true``).
    """
    head = containers(spec.head_group_spec.template)
    if head and (problem := _container_problem(head[0], "head Pod")):
        return problem
    for group in spec.worker_group_specs or ():
        workers = containers(group.template)
        where = f'worker group "{group.group_name}"'
        if workers and (problem := _container_problem(workers[0], where)):
            return problem
    options = spec.autoscaler_options
    if options is not None:
        entries = [e for e in options.env or () if isinstance(e, Mapping)]
        for name in TLS_ENV_NAMES:
            if env_var(name, entries) is not None:
                return (
                    f"cannot set {name} environment variable in autoscalerOptions.env when "
                    "tlsOptions is set - the operator manages TLS configuration for the "
                    "autoscaler automatically"
                )
        if problem := _mount_problem(
            _mounts(options.volume_mounts), "autoscalerOptions.volumeMounts"
        ):
            return problem
    return None
