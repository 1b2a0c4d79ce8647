"""KubeRay v1.7's ``ValidateRayClusterSpec``: the checks of a RayCluster spec, in KubeRay's order.

The spec is a RayCluster's ``spec``, a RayJob's ``rayClusterSpec`` or a RayService's
``rayClusterConfig``; KubeRay validates all three with this one function, so do the callers
here. As in KubeRay, the first failing check is the answer and its message is KubeRay's.

Checks of a feature whose gate is off (history server, network policy, mTLS, embedded RocksDB,
suspended worker groups without ``RayJobDeletionPolicy``) end the checks without a message: the
controllers' gate checks (``rayop.controllers.kit.gate_checks``) refuse those fields, with
the gate named. With their gates on, ``historyServerOptions`` and ``networkPolicy`` get KubeRay's
checks (``history_server.py``, ``network_policy.py``), and enabled ``tlsOptions`` KubeRay's
``validateTLSOptions`` (``tls_options.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from rayop.api.raycluster import (
    AuthMode,
    AutoscalerVersion,
    RayClusterSpec,
    WorkerGroupSpec,
)
from rayop.api.validation.gates import Gates, gate_on
from rayop.api.validation.gcs_ft import gcs_ft_problem
from rayop.api.validation.go_values import parse_generic_version, version_less
from rayop.api.validation.history_server import history_server_problem
from rayop.api.validation.k8s_names import label_key_errors, label_value_errors
from rayop.api.validation.network_policy import network_policy_problem
from rayop.api.validation.pod_template import containers, env, env_var, template_spec
from rayop.api.validation.tls_options import tls_options_problem

__all__ = ["cluster_spec_problem", "is_autoscaling_enabled"]

RAY_ENABLE_AUTOSCALER_V2: Final = "RAY_enable_autoscaler_v2"
KUBERAY_GEN_AUTOSCALER_START_CMD: Final = "KUBERAY_GEN_AUTOSCALER_START_CMD"

_NO_MESSAGE: Final = ""
"""Returned by a check that stops at a gated feature: no KubeRay message, the gate check speaks."""


def is_autoscaling_enabled(spec: RayClusterSpec | None) -> bool:
    """Tells whether in-tree autoscaling is on (KubeRay's ``IsAutoscalingEnabled``)."""
    return spec is not None and spec.enable_in_tree_autoscaling is True


def _is_autoscaling_v2(spec: RayClusterSpec) -> bool:
    options = spec.autoscaler_options
    return options is not None and options.version == AutoscalerVersion.V2


def _v2_env_on(head_env: Sequence[Mapping[str, Any]]) -> bool:
    var = env_var(RAY_ENABLE_AUTOSCALER_V2, head_env)
    return var is not None and var.get("value") in ("1", "true")


def _group_resources(group: str, params: Mapping[str, str], resources: Mapping[str, str]) -> str:
    keys_set = any(params.get(k) for k in ("num-cpus", "num-gpus", "memory", "resources"))
    if keys_set and resources:
        return (
            f"resource fields should not be set in both rayStartParams and Resources for {group} "
            "group; please use only one"
        )
    return ""


def _group_labels(group: str, params: Mapping[str, str], labels: Mapping[str, str]) -> str:
    if "labels" in params:
        return (
            f"rayStartParams['labels'] is not supported for {group} group; please use the "
            "top-level Labels field instead"
        )
    errors = []
    for key, value in labels.items():
        errors += [
            f"invalid label key for {group} group: '{key}', error: {e}"
            for e in label_key_errors(key)
        ]
        errors += [
            f"invalid label value for key '{key}' in {group} group: '{value}', error: {e}"
            for e in label_value_errors(value)
        ]
    return "; ".join(errors)


def _worker_problem(
    group: WorkerGroupSpec, spec: RayClusterSpec, head_env: Sequence[Mapping[str, Any]]
) -> str:
    name = group.group_name
    if not containers(group.template):
        return "workerGroupSpec should have at least one container"
    # KubeRay also refuses a group without minReplicas or maxReplicas when autoscaling is off;
    # the CRD defaults both (0 and 2147483647), so no object the API server admits lacks them.
    if group.min_replicas < 0:
        return f"worker group {name} has negative minReplicas {group.min_replicas}"
    if group.max_replicas < 0:
        return f"worker group {name} has negative maxReplicas {group.max_replicas}"
    if group.min_replicas > group.max_replicas:
        return (
            f"worker group {name} has minReplicas {group.min_replicas} greater than "
            f"maxReplicas {group.max_replicas}"
        )
    params = group.ray_start_params or {}
    problem = _group_resources(name, params, group.resources or {}) or _group_labels(
        name, params, group.labels or {}
    )
    if problem:
        return problem
    return _idle_timeout_problem(group, spec, head_env) or _priority_problem(group, spec, head_env)


def _idle_timeout_problem(
    group: WorkerGroupSpec, spec: RayClusterSpec, head_env: Sequence[Mapping[str, Any]]
) -> str:
    timeout = group.idle_timeout_seconds
    if timeout is None:
        return ""
    if timeout < 0:
        return (
            f"worker group {group.group_name}: idleTimeoutSeconds must be non-negative, "
            f"got {timeout}"
        )
    if _is_autoscaling_v2(spec) or _v2_env_on(head_env):
        return ""
    return (
        f"worker group {group.group_name}: idleTimeoutSeconds is set, but autoscaler v2 is not "
        "enabled. Please set .spec.autoscalerOptions.version to 'v2' (or set "
        f"{RAY_ENABLE_AUTOSCALER_V2} environment variable to 'true' in the head pod if using "
        "KubeRay < 1.4.0)"
    )


def _ray_version_at_least(
    spec: RayClusterSpec, minimum: tuple[int, int, int], lead: str
) -> tuple[tuple[int, ...] | None, str]:
    """KubeRay's check that a feature's minimum Ray version is met: returns ``spec.rayVersion``
    parsed and "", or None and the message (which starts with ``lead``)."""
    wanted = ".".join(str(part) for part in minimum)
    if not spec.ray_version:
        return None, (
            f"{lead} RayVersion was not specified. Ray version {wanted} or later is required"
        )
    version, error = parse_generic_version(spec.ray_version)
    if version is None:
        return None, f"{lead} RayVersion format is invalid: {spec.ray_version}, {error}"
    if version_less(version, minimum):
        return None, f"{lead} minimum Ray version is {wanted}, got {spec.ray_version}"
    return version, ""


def _priority_problem(
    group: WorkerGroupSpec, spec: RayClusterSpec, head_env: Sequence[Mapping[str, Any]]
) -> str:
    priority, name = group.priority, group.group_name
    if not priority:
        return ""
    _, problem = _ray_version_at_least(
        spec, (2, 56, 0), f"worker group {name}: priority is set, but"
    )
    if problem:
        return problem
    if _is_autoscaling_v2(spec) or _v2_env_on(head_env):
        return ""
    return (
        f"worker group {name}: priority is set to {priority}, but autoscaler v2 is not enabled. "
        "Priority is only supported with autoscaler v2 enabled"
    )


def cluster_spec_problem(
    spec: RayClusterSpec, annotations: Mapping[str, str], gates: Gates | None = None
) -> str | None:
    """Returns KubeRay's message for the first check ``spec`` fails, None when it passes.

    An empty message means the checks stopped at a feature whose gate is off (see the module
    docstring): the caller's gate checks report it.

    Args:
        spec: The cluster spec.
        annotations: The annotations of the object holding it (FT and storage annotations).
        gates: KubeRay feature gates by name; KubeRay's defaults when None.
    """
    head = spec.head_group_spec
    headcontainers = containers(head.template)
    if not headcontainers:
        return "headGroupSpec should have at least one container"
    head_params = head.ray_start_params or {}
    problem = _group_resources("Head", head_params, head.resources or {}) or _group_labels(
        "Head", head_params, head.labels or {}
    )
    if problem:
        return problem
    head_container = headcontainers[0]
    head_env = env(head_container)
    for group in spec.worker_group_specs or ():
        if problem := _worker_problem(group, spec, head_env):
            return problem
    problem_or_stop = gcs_ft_problem(spec, annotations, head_env, head_container, gates)
    if problem_or_stop is not None:
        return problem_or_stop
    return _rest(spec, head_env, gates)


def _rest(
    spec: RayClusterSpec, head_env: Sequence[Mapping[str, Any]], gates: Gates | None
) -> str | None:
    """The checks after GCS fault tolerance: suspend, autoscaler, auth, gated features."""
    groups = spec.worker_group_specs or ()
    if not gate_on(gates, "RayJobDeletionPolicy") and any(g.suspend for g in groups):
        return _NO_MESSAGE
    autoscaling = is_autoscaling_enabled(spec)
    v2_env = env_var(RAY_ENABLE_AUTOSCALER_V2, head_env)
    if not autoscaling and v2_env is not None and v2_env.get("value") in ("1", "true"):
        return (
            f"environment variable {RAY_ENABLE_AUTOSCALER_V2} cannot be set to "
            f"'{v2_env.get('value')}' when enableInTreeAutoscaling is false. Please set "
            "enableInTreeAutoscaling: true to use autoscaler v2"
        )
    if autoscaling and (problem := _autoscaling_problem(spec, v2_env is not None)):
        return problem
    options = spec.autoscaler_options
    idle = options.idle_timeout_seconds if options is not None else None
    if idle is not None and idle < 0:
        return f"autoscalerOptions.idleTimeoutSeconds must be non-negative, got {idle}"
    if options is not None and env_var(
        KUBERAY_GEN_AUTOSCALER_START_CMD, [e for e in options.env or () if isinstance(e, Mapping)]
    ):
        return (
            f"autoscalerOptions.env must not contain {KUBERAY_GEN_AUTOSCALER_START_CMD}: it is "
            "managed by KubeRay and injected automatically into the autoscaler container"
        )
    if spec.history_server_options is not None:
        if not gate_on(gates, "RayClusterHistoryServer"):
            return _NO_MESSAGE
        if problem := history_server_problem(spec):
            return problem
    if problem := _auth_problem(spec):
        return problem
    if spec.network_policy is not None:
        if not gate_on(gates, "RayClusterNetworkPolicy"):
            return _NO_MESSAGE
        if problem := network_policy_problem(spec):
            return problem
    tls = spec.tls_options
    if tls is not None:
        if not gate_on(gates, "RayClusterMTLS"):
            return _NO_MESSAGE
        if tls.enabled and (tls_problem := tls_options_problem(spec)):
            return tls_problem
    return None


def _autoscaling_problem(spec: RayClusterSpec, v2_env_set: bool) -> str:
    for group in spec.worker_group_specs or ():
        if group.suspend:
            return f"worker group {group.group_name} cannot be suspended with Autoscaler enabled"
    options = spec.autoscaler_options
    if options is not None and options.version is not None and v2_env_set:
        return (
            "both .spec.autoscalerOptions.version and head Pod env var "
            f"{RAY_ENABLE_AUTOSCALER_V2} are set, please only use the former"
        )
    if not _is_autoscaling_v2(spec):
        return ""
    if template_spec(spec.head_group_spec.template).get("restartPolicy") not in (
        None,
        "",
        "Never",
    ):
        return "restartPolicy for head Pod should be Never or unset when using autoscaler V2"
    for group in spec.worker_group_specs or ():
        if template_spec(group.template).get("restartPolicy") not in (None, "", "Never"):
            return (
                f"restartPolicy for worker group {group.group_name} should be Never or unset "
                "when using autoscaler V2"
            )
    return ""


def _auth_problem(spec: RayClusterSpec) -> str:
    auth = spec.auth_options
    k8s_auth = auth is not None and auth.enable_k8s_token_auth is True
    if auth is None or auth.mode != AuthMode.TOKEN:
        if k8s_auth:
            return (
                "authOptions.enableK8sTokenAuth is enabled but authOptions.mode not set to 'token'"
            )
        return ""
    version, problem = _ray_version_at_least(spec, (2, 52, 0), "authOptions.mode is 'token' but")
    if version is None:
        return problem
    if k8s_auth:
        if version_less(version, (2, 55, 0)):
            return (
                "authOptions.enableK8sTokenAuth is enabled but minimum Ray version is 2.55.0, "
                f"got {spec.ray_version}"
            )
        if auth.secret_name:
            return (
                "authOptions.enableK8sTokenAuth is enabled and authOptions.secretName is also set"
            )
    return ""
