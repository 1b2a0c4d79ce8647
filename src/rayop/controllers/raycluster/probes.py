"""Liveness and readiness probes KubeRay injects into the Ray container.

KubeRay v1.7.0: ``initLivenessAndReadinessProbe`` in ``ray-operator/controllers/ray/common/pod.go``.

Probes are added only where the user set none and ``ENABLE_PROBES_INJECTION`` is not false. Ray
2.53 and later get an HTTP check of ``/api/healthz`` on the dashboard agent port; older Ray gets
``wget`` checks of the raylet (and, on the head, of the GCS through the dashboard).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

DASHBOARD_AGENT_PORT = 52365
DASHBOARD_PORT = 8265
SERVE_PORT = 8000
_WGET = "wget --tries 1 -T {timeout} -q -O- http://localhost:{port}/{path} | grep success"
_MIN_UNIFIED_VERSION = (2, 53, 0)
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")


def supports_http_health_check(ray_version: str | None) -> bool:
    """Tells whether ``spec.rayVersion`` is 2.53.0 or later (an unparsable version is not)."""
    match = _VERSION.match((ray_version or "").strip())
    if not match:
        return False
    version = tuple(int(g or 0) for g in match.groups())
    return version >= _MIN_UNIFIED_VERSION


def _port(params: Mapping[str, str], key: str, default: int) -> int:
    try:
        value = int(params[key])
    except (KeyError, ValueError):
        return default
    return value if -(2**31) <= value < 2**31 else default


def _container_port(container: Mapping[str, Any], port_name: str, default: int) -> int:
    for port in container.get("ports") or []:
        if port.get("name") == port_name:
            return int(port.get("containerPort", default))
    return default


def _probe(initial_delay: int, timeout: int, failure_threshold: int) -> dict[str, Any]:
    return {
        "initialDelaySeconds": initial_delay,
        "timeoutSeconds": timeout,
        "periodSeconds": 5,
        "successThreshold": 1,
        "failureThreshold": failure_threshold,
    }


def add_probes(
    container: dict[str, Any],
    *,
    node_type: str,
    creator_crd: str,
    params: Mapping[str, str],
    ray_version: str | None,
) -> None:
    """Sets missing liveness/readiness probes on the Ray container (mutates ``container``)."""
    agent_port = _port(params, "dashboard-agent-listen-port", DASHBOARD_AGENT_PORT)
    http_get = {"path": "/api/healthz", "port": agent_port}
    commands = [_WGET.format(timeout=2, port=agent_port, path="api/local_raylet_healthz")]
    if node_type == "head":
        dashboard_port = _port(params, "dashboard-port", DASHBOARD_PORT)
        # KubeRay passes the readiness failure threshold (10) as this wget's timeout.
        commands.append(_WGET.format(timeout=10, port=dashboard_port, path="api/gcs_healthz"))
    use_http = supports_http_health_check(ray_version)
    head_timeout = 5 if node_type == "head" else 2

    def exec_action(cmds: list[str]) -> dict[str, Any]:
        return {"command": ["bash", "-c", " && ".join(cmds)]}

    if container.get("livenessProbe") is None:
        probe = _probe(30, head_timeout, 120)
        probe.update({"httpGet": dict(http_get)} if use_http else {"exec": exec_action(commands)})
        container["livenessProbe"] = probe
    if container.get("readinessProbe") is None:
        probe = _probe(10, head_timeout, 10)
        probe.update({"httpGet": dict(http_get)} if use_http else {"exec": exec_action(commands)})
        if creator_crd == "RayService" and node_type == "worker":
            serve_port = _container_port(container, "serve", SERVE_PORT)
            serve = _WGET.format(timeout=10, port=serve_port, path="-/healthz")
            probe.pop("httpGet", None)
            probe["exec"] = exec_action([*commands, serve])
            probe["failureThreshold"] = 1
        container["readinessProbe"] = probe
