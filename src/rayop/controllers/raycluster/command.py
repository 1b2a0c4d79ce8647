"""The ``ray start`` command KubeRay generates from ``rayStartParams`` and container resources.

:func:`ray_start_params` completes a group's parameters the way KubeRay's pod templates do
(group ``resources``/``labels`` fields, ``address``, ``dashboard-host``, ``metrics-export-port``,
``block``, ``dashboard-agent-listen-port``, ``no-monitor``, Redis credentials);
:func:`ray_start_command` adds the resource-derived flags and renders the command line;
:func:`container_command` and :func:`container_args` lay it out in the Ray container.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rayop.api.raycluster import HeadGroupSpec, RayCluster, WorkerGroupSpec
from rayop.apimachinery.objects import ObjView as Obj
from rayop.apimachinery.quantity import Quantity, parse_resource_list
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.raycluster.resources import is_gpu_resource

DEFAULT_METRICS_PORT = 8080
DEFAULT_DASHBOARD_AGENT_LISTEN_PORT = 52365
ULIMIT_COMMAND = "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}"
_CUSTOM_ACCELERATORS = {"aws.amazon.com/neuroncore": "neuron_cores", "google.com/tpu": "TPU"}
_EXPLICIT_BOOLEAN_FLAGS = frozenset({"log-color", "include-dashboard", "include-log-monitor"})


def go_float(value: float) -> str:
    """Formats a float the way Go's encoding/json does (``4`` rather than ``4.0``)."""
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


def _resources_json(resources: Mapping[str, float]) -> str:
    body = ",".join(f"{json.dumps(k)}:{go_float(v)}" for k, v in sorted(resources.items()))
    return "'{" + body + "}'"


def _parse_resources_param(params: Mapping[str, str]) -> dict[str, float]:
    raw = params.get("resources")
    if raw is None:
        return {}
    # Users write the value quoted and escaped for the shell ('"{\"TPU\": 4}"'): drop the outer
    # quotes and the backslashes before decoding, as KubeRay does.
    text = raw.strip("'\"` ").replace("\\", "")
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"rayStartParams.resources is not a JSON object: {raw!r}") from exc
    if not isinstance(parsed, dict):
        raise ValueError(f"rayStartParams.resources is not a JSON object: {raw!r}")
    return {str(k): float(v) for k, v in parsed.items()}


def _apply_group_resources(params: dict[str, str], group_resources: Mapping[str, Any]) -> None:
    custom: dict[str, float] = {}
    for res_name, text in group_resources.items():
        try:
            q = Quantity.parse(str(text))
        except ValueError:
            continue
        lowered = res_name.lower()
        if lowered == "cpu":
            params["num-cpus"] = str(q.int_value())
        elif lowered == "memory":
            params["memory"] = str(q.int_value())
        elif is_gpu_resource(lowered):
            params["num-gpus"] = str(q.int_value())
        else:
            custom[res_name] = q.as_float()
    if custom:
        params["resources"] = _resources_json(custom)


def _apply_group_labels(params: dict[str, str], group_labels: Mapping[str, Any]) -> None:
    if group_labels:
        params["labels"] = ",".join(f"{k}={group_labels[k]}" for k in sorted(group_labels))


def ray_start_params(
    rc: RayCluster, group: HeadGroupSpec | WorkerGroupSpec, *, node_type: str, fqdn: str
) -> dict[str, str]:
    """Returns the group's ``rayStartParams`` completed with KubeRay's defaults (a fresh dict)."""
    params = {str(k): str(v) for k, v in (group.ray_start_params or {}).items()}
    _apply_group_resources(params, group.resources or {})
    _apply_group_labels(params, group.labels or {})
    if node_type == "worker":
        params.setdefault("address", f"{fqdn}:{cs.head_port(rc)}")
    else:
        params.setdefault("dashboard-host", "0.0.0.0")
    params.setdefault("metrics-export-port", str(DEFAULT_METRICS_PORT))
    params["block"] = "true"
    params.setdefault("dashboard-agent-listen-port", str(DEFAULT_DASHBOARD_AGENT_LISTEN_PORT))
    if node_type == "head":
        if rc.spec.enable_in_tree_autoscaling:
            params["no-monitor"] = "true"
        _apply_redis_credentials(rc, params)
    return params


def _apply_redis_credentials(rc: RayCluster, params: dict[str, str]) -> None:
    options = rc.spec.gcs_fault_tolerance_options
    if options is None or cs.is_gcs_ft_embedded(rc):
        return
    if options.redis_username is not None:
        params["redis-username"] = "$REDIS_USERNAME"
    if options.redis_password is not None:
        params["redis-password"] = "$REDIS_PASSWORD"


def _add_resource_flags(params: dict[str, str], container: Obj) -> None:
    resources = container.get("resources") or {}
    limits = parse_resource_list(resources.get("limits"))
    requests = parse_resource_list(resources.get("requests"))
    if "num-cpus" not in params:
        cpu = limits.get("cpu")
        if cpu is None or cpu.is_zero():
            cpu = requests.get("cpu")
        if cpu is not None and not cpu.is_zero():
            params["num-cpus"] = str(cpu.int_value())
    memory = limits.get("memory")
    if "memory" not in params and memory is not None and not memory.is_zero():
        params["memory"] = str(memory.int_value())
    _add_accelerators(params, limits)


def _add_accelerators(params: dict[str, str], limits: Mapping[str, Quantity]) -> None:
    if not limits:
        return
    custom = _parse_resources_param(params)
    accelerator_done = any(v in custom for v in _CUSTOM_ACCELERATORS.values())
    for key in sorted(limits):
        value = limits[key]
        if "num-gpus" not in params and is_gpu_resource(key) and not value.is_zero():
            params["num-gpus"] = str(value.int_value())
        ray_name = _CUSTOM_ACCELERATORS.get(key)
        if not accelerator_done and ray_name is not None and not value.is_zero():
            if ray_name not in custom:
                custom[ray_name] = value.as_float()
                params["resources"] = _resources_json(custom)
            accelerator_done = True


def render_params(params: Mapping[str, str]) -> str:
    """Renders parameters as KubeRay does: sorted, ``" --k "`` for true, ``" --k=v "`` otherwise."""
    flags = []
    for key in sorted(params):
        value = params[key]
        lowered = value.lower()
        if lowered in ("true", "false") and key not in _EXPLICIT_BOOLEAN_FLAGS:
            if lowered == "true":
                flags.append(f" --{key} ")
        else:
            flags.append(f" --{key}={value} ")
    return "".join(flags)


def ray_start_command(node_type: str, params: dict[str, str], container: Obj) -> str:
    """Adds num-cpus/memory/num-gpus/accelerators to ``params`` (in place) and renders the command."""
    _add_resource_flags(params, container)
    prefix = "ray start --head" if node_type == "head" else "ray start"
    return f"{prefix} {render_params(params)}"


def container_command(*, login_shell: bool) -> list[str]:
    """Returns the shell KubeRay runs containers with: ``/bin/bash -c --`` (``-cl`` for a login shell)."""
    return ["/bin/bash", "-cl" if login_shell else "-c", "--"]


def _joined(parts: list[str]) -> str:
    return "".join(f" {p} " for p in parts)


def container_args(container: Obj, ray_start_cmd: str, *, overwrite: bool) -> list[str] | None:
    """Returns the Ray container's new ``args``, or None when KubeRay leaves command/args alone.

    KubeRay keeps the user's command when ``ray.io/overwrite-container-cmd`` is true or the user's
    command already contains ``ray start``; otherwise the user's command and args run first,
    then the ulimit and the generated ``ray start``.
    """
    user = _joined(list(container.get("command") or [])) + _joined(
        list(container.get("args") or [])
    )
    if overwrite or "ray start" in user:
        return None
    generated = f"{ULIMIT_COMMAND}; {ray_start_cmd}"
    return [f"{user} && {generated}" if user else generated]
