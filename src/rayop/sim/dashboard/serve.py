"""The simulated Ray Serve state behind /api/serve/applications/ and the Serve proxy on 8000.

Serve starts with the first PUT. Each application goes DEPLOYING (deployments UPDATING) and,
``deploy_seconds`` after its config last changed, RUNNING (deployments HEALTHY); tests may pin
an application to another status (DEPLOY_FAILED, UNHEALTHY...). The GET answer has the
ServeInstanceDetails shape of Ray 2.60's Serve REST API (``ServeInstanceDetails`` in Ray's
``python/ray/serve/schema.py``; https://docs.ray.io/en/latest/serve/api/).
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass, field
from typing import Any

from rayop.sim.dashboard.clock import SimClock
from rayop.sim.dashboard.jobs import DashboardHttpError

__all__ = ["NOT_RUNNING_BODY", "ServeApp", "ServeState"]

NOT_RUNNING_BODY: dict[str, Any] = {
    "controller_info": {},
    "proxies": {},
    "applications": {},
    "target_capacity": None,
}


@dataclass
class ServeApp:
    """One deployed application: its config as PUT and when that config last changed."""

    config: dict[str, Any]
    deployed_at: float
    forced_status: str | None = None
    forced_message: str = ""

    @property
    def name(self) -> str:
        """The application name ("default" when the config gives none)."""
        return str(self.config.get("name") or "default")

    @property
    def route_prefix(self) -> str | None:
        """The configured route prefix ("/" by default, None when set to null)."""
        prefix = self.config.get("route_prefix", "/")
        return None if prefix is None else str(prefix)


def _invalid(message: str) -> DashboardHttpError:
    return DashboardHttpError(
        400,
        f"1 validation error for ServeDeploySchema\napplications\n  Value error, {message} "
        "[type=value_error]",
    )


@dataclass(kw_only=True, eq=False)
class ServeState:
    """Serve on one simulated head: the application set and the proxy's route table.

    Attributes:
        clock: Time source.
        deploy_seconds: How long an application stays DEPLOYING after a config change.
        node_id: The head's node id; node_ip: its IP.
        running: Whether Serve has started (with the first PUT).
        apps: The applications by name.
        target_capacity: The config's target_capacity, if any.
        proxy_location: The config's proxy_location.
        puts: Every accepted PUT so far.
        capacities: The target_capacity of every accepted PUT, in order (what a client that
            samples ``target_capacity`` may miss between two reads).
    """

    clock: SimClock
    deploy_seconds: float
    node_id: str
    node_ip: str
    running: bool = field(default=False, init=False)
    apps: dict[str, ServeApp] = field(default_factory=dict, init=False)
    target_capacity: float | None = field(default=None, init=False)
    proxy_location: str = field(default="EveryNode", init=False)
    puts: int = field(default=0, init=False)
    capacities: list[float | None] = field(default_factory=list, init=False)

    # -- commands ------------------------------------------------------------------------

    def put(self, body: Any) -> None:
        """Validates and applies a ServeDeploySchema (the complete desired application set).

        Raises:
            DashboardHttpError: 400 on a schema violation, 500 when the body is not an object.
        """
        if not isinstance(body, dict):
            raise DashboardHttpError(
                500, "500 Internal Server Error\n\nServer got itself in trouble"
            )
        apps = body.get("applications")
        if not isinstance(apps, list):
            raise DashboardHttpError(
                400,
                "1 validation error for ServeDeploySchema\napplications\n  Field required "
                "[type=missing]",
            )
        capacity = body.get("target_capacity")
        if capacity is not None and (
            not isinstance(capacity, (int, float)) or not 0 <= capacity <= 100
        ):
            raise _invalid("target_capacity must be between 0 and 100.")
        _validate_apps(apps)
        now = self.clock.time()
        new: dict[str, ServeApp] = {}
        for raw in apps:
            name = str(raw.get("name") or "default")
            old = self.apps.get(name)
            if old is not None and old.config == raw:
                new[name] = old
            else:
                new[name] = ServeApp(config=copy.deepcopy(raw), deployed_at=now)
        if self.running and capacity != self.target_capacity:
            for app in new.values():
                app.deployed_at = now
        self.apps = new
        self.target_capacity = None if capacity is None else float(capacity)
        self.proxy_location = str(body.get("proxy_location") or "EveryNode")
        self.running = True
        self.puts += 1
        self.capacities.append(self.target_capacity)

    def shutdown(self) -> None:
        """DELETE /api/serve/applications/: stops Serve and forgets every application."""
        self.running = False
        self.apps = {}
        self.target_capacity = None

    def force_status(self, app: str, status: str | None, message: str = "") -> None:
        """Pins an application's status (None: back to the simulated timeline)."""
        target = self.apps.get(app)
        if target is None:
            raise KeyError(app)
        target.forced_status = status
        target.forced_message = message

    # -- queries -------------------------------------------------------------------------

    def routes(self) -> dict[str, str]:
        """Returns the proxy's route table (route prefix -> application)."""
        return {a.route_prefix: a.name for a in self.apps.values() if a.route_prefix is not None}

    def app_status(self, app: ServeApp) -> str:
        """Returns the application's status now."""
        if app.forced_status is not None:
            return app.forced_status
        return (
            "RUNNING" if self.clock.time() >= app.deployed_at + self.deploy_seconds else "DEPLOYING"
        )

    def details(self, api_type: str | None) -> dict[str, Any]:
        """Returns the GET /api/serve/applications/ body.

        Raises:
            DashboardHttpError: 400 for an invalid ``api_type``.
        """
        kind = (api_type or "").lower()
        if api_type is not None and kind not in ("imperative", "declarative"):
            raise DashboardHttpError(
                400,
                f"Invalid 'api_type' value: '{api_type}'. Must be one of: imperative, declarative",
            )
        if not self.running:
            return copy.deepcopy(NOT_RUNNING_BODY)
        apps = (
            {}
            if kind == "imperative"
            else {a.name: self._app_details(a) for a in self.apps.values()}
        )
        now = self.clock.time()
        return {
            "controller_info": self._actor("SERVE_CONTROLLER_ACTOR", "controller"),
            "proxy_location": self.proxy_location,
            "http_options": {
                "host": "0.0.0.0",
                "port": 8000,
                "root_path": "",
                "request_timeout_s": None,
                "keep_alive_timeout_s": 90,
                "ssl_keyfile": None,
                "ssl_certfile": None,
                "ssl_keyfile_password": None,
                "ssl_ca_certs": None,
            },
            "grpc_options": {
                "port": 9000,
                "grpc_servicer_functions": [],
                "request_timeout_s": None,
                "enable_reflection": True,
            },
            "proxies": {
                self.node_id: {
                    **self._actor(f"SERVE_PROXY_ACTOR-{self.node_id}", "proxy"),
                    "status": "HEALTHY",
                }
            },
            "applications": apps,
            "target_capacity": self.target_capacity,
            "target_groups": [
                {
                    "targets": [
                        {
                            "ip": self.node_ip,
                            "port": 8000,
                            "instance_id": "",
                            "name": f"SERVE_PROXY_ACTOR-{self.node_id}",
                        }
                    ],
                    "route_prefix": prefix,
                    "protocol": "HTTP",
                    "app_name": name,
                    "ingress_request_router_targets": [],
                    "ingress_deployment_name": None,
                }
                for prefix, name in self.routes().items()
            ],
            "controller_health_metrics": {"timestamp": now, "num_control_loops": int(now) % 100000},
            "restores_unset_config_options": True,
        }

    def _actor(self, name: str, kind: str) -> dict[str, Any]:
        return {
            "node_id": self.node_id,
            "node_ip": self.node_ip,
            "node_instance_id": "",
            "actor_id": f"{kind}{self.node_id[:24]}",
            "actor_name": name,
            "worker_id": self.node_id[:56],
            "log_file_path": f"/serve/{kind}.log",
        }

    def _app_details(self, app: ServeApp) -> dict[str, Any]:
        status = self.app_status(app)
        healthy = status == "RUNNING"
        message = app.forced_message if app.forced_status is not None else ""
        dep_status = {
            "RUNNING": "HEALTHY",
            "DEPLOYING": "UPDATING",
            "UNHEALTHY": "UNHEALTHY",
            "DEPLOY_FAILED": "DEPLOY_FAILED",
        }.get(status, "UPDATING")
        trigger = {
            "HEALTHY": "CONFIG_UPDATE_COMPLETED",
            "UNHEALTHY": "HEALTH_CHECK_FAILED",
            "DEPLOY_FAILED": "REPLICA_STARTUP_FAILED",
        }.get(dep_status, "CONFIG_UPDATE_STARTED")
        deployments = {}
        for dep in _deployment_configs(app.config):
            name = str(dep["name"])
            replicas = self._target_replicas(dep)
            deployments[name] = {
                "name": name,
                "status": dep_status,
                "status_trigger": trigger,
                "message": message if dep_status in ("UNHEALTHY", "DEPLOY_FAILED") else "",
                "deployment_config": {
                    "name": name,
                    "num_replicas": dep.get("num_replicas", 1),
                    **{k: v for k, v in dep.items() if k != "name"},
                },
                "target_num_replicas": replicas,
                "required_resources": {"CPU": 1},
                "replicas": [
                    {
                        **self._actor(f"SERVE_REPLICA::{app.name}#{name}#r{i}", "replica"),
                        "replica_id": f"r{i}",
                        "state": "RUNNING" if healthy else "STARTING",
                        "pid": 5000 + i,
                        "start_time_s": app.deployed_at,
                    }
                    for i in range(replicas)
                ],
                "recent_dead_replicas": [],
                "autoscaling_detail": None,
            }
        return {
            "name": app.name,
            "route_prefix": app.route_prefix if healthy else None,
            "docs_path": None,
            "status": status,
            "message": message,
            "last_deployed_time_s": app.deployed_at,
            "deployed_app_config": copy.deepcopy(app.config),
            "source": "declarative",
            "deployments": deployments,
            "external_scaler_enabled": bool(app.config.get("external_scaler_enabled", False)),
            "deployment_topology": None,
        }

    def _target_replicas(self, dep: dict[str, Any]) -> int:
        auto = dep.get("autoscaling_config")
        base = dep.get("num_replicas", 1)
        if isinstance(auto, dict):
            base = auto.get("initial_replicas", auto.get("min_replicas", 1))
        if not isinstance(base, int) or isinstance(base, bool):
            base = 1
        if self.target_capacity is None:
            return base
        return math.ceil(base * self.target_capacity / 100.0)


def _deployment_configs(config: dict[str, Any]) -> list[dict[str, Any]]:
    deps = [d for d in config.get("deployments") or [] if isinstance(d, dict) and d.get("name")]
    if deps:
        return deps
    import_path = str(config.get("import_path") or "app")
    attr = import_path.split(":")[-1].split(".")[-1] or "app"
    return [{"name": attr}]


def _validate_apps(apps: list[Any]) -> None:
    names: set[str] = set()
    prefixes: set[str] = set()
    for raw in apps:
        if not isinstance(raw, dict):
            raise _invalid("applications must be objects.")
        name = str(raw.get("name", "default"))
        if not name:
            raise _invalid("Application name must be a non-empty string.")
        if name in names:
            raise _invalid(
                f'Found multiple configs for application "{name}". Please remove all duplicates.'
            )
        names.add(name)
        import_path = raw.get("import_path")
        if not isinstance(import_path, str) or not import_path or import_path.count(":") > 1:
            raise DashboardHttpError(
                400,
                "1 validation error for ServeDeploySchema\napplications.0.import_path\n  "
                f"Field required or invalid: {json.dumps(import_path)} [type=value_error]",
            )
        prefix = raw.get("route_prefix", "/")
        if prefix is not None:
            if (
                not isinstance(prefix, str)
                or not prefix.startswith("/")
                or (prefix != "/" and prefix.endswith("/"))
            ):
                raise _invalid(
                    f'route_prefix "{prefix}" must start with "/" and must not end '
                    'with "/" unless it is exactly "/".'
                )
            if prefix in prefixes:
                raise _invalid(f'Found duplicate route prefix "{prefix}".')
            prefixes.add(prefix)
        for dep in raw.get("deployments") or []:
            if (
                isinstance(dep, dict)
                and isinstance(dep.get("num_replicas"), int)
                and dep.get("autoscaling_config") is not None
            ):
                raise _invalid(
                    "Manually setting num_replicas is not allowed when "
                    "autoscaling_config is provided."
                )
