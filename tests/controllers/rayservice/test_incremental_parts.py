"""The pure parts of NewClusterWithIncrementalUpgrade: the Gateway API objects, the weights,
the capacity decisions, the rollback decision, and the gate."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from rayop.api.rayservice import ClusterUpgradeOptions, RayService
from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.rayservice import cluster_builders as cs
from rayop.controllers.rayservice.incremental import gateway as gw
from rayop.controllers.rayservice.incremental.mode import is_incremental
from rayop.controllers.rayservice.incremental.rollback import rollback_complete, rollback_decision
from rayop.controllers.rayservice.incremental.state import RouteState
from rayop.controllers.rayservice.incremental.target_capacity import goal_capacity, needs_update
from rayop.controllers.rayservice.incremental.traffic import next_weights

from .incremental_world import incremental_spec
from .rayservice_fakes import cluster_of, rayservice

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
OPTIONS = ClusterUpgradeOptions(
    gateway_class_name="istio", step_size_percent=10, interval_seconds=30, max_surge_percent=10
)
Obj = dict[str, Any]


def _service() -> RayService:
    return RayService.model_validate(rayservice(**incremental_spec(step=10, interval=30, surge=10)))


def _status(active: Obj, pending: Obj, *conditions: str) -> Obj:
    return {
        "activeServiceStatus": {"rayClusterName": "a", **active},
        "pendingServiceStatus": {"rayClusterName": "p", **pending},
        "conditions": [{"type": c, "status": "True"} for c in conditions],
    }


def test_gateway_and_route_have_kuberays_names_listener_parent_and_backends() -> None:
    service = _service()
    gateway = gw.build_gateway(service, "istio")
    assert gateway["metadata"]["name"] == "svc-gateway"
    assert gateway["metadata"]["ownerReferences"][0]["kind"] == "RayService"
    assert gateway["spec"]["listeners"] == [{"name": "http", "protocol": "HTTP", "port": 80}]
    raw = rayservice()
    route = gw.build_route(
        service, [(cluster_of(raw, "svc-a"), 70), (cluster_of(raw, "svc-p"), 30)]
    )
    assert route["metadata"]["name"] == "svc-httproute"
    assert route["spec"]["parentRefs"] == [{"name": "svc-gateway", "namespace": "ns"}]
    rule = route["spec"]["rules"][0]
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/"}}]
    assert rule["backendRefs"] == [
        {"name": "svc-a-serve-svc", "namespace": "ns", "port": 8000, "weight": 70},
        {"name": "svc-p-serve-svc", "namespace": "ns", "port": 8000, "weight": 30},
    ]
    assert gw.route_weights(route, "svc-a", "svc-p") == (70, 30)
    assert gw.route_weights(None, "svc-a", "svc-p") == (-1, -1)


def test_equality_ignores_what_the_server_defaults() -> None:
    service = _service()
    gateway = gw.build_gateway(service, "istio")
    served = {
        **gateway,
        "spec": {
            **gateway["spec"],
            "listeners": [
                {
                    "name": "http",
                    "protocol": "HTTP",
                    "port": 80,
                    "allowedRoutes": {"namespaces": {"from": "Same"}},
                }
            ],
        },
    }
    assert gw.gateway_equal(served, gateway)
    assert not gw.gateway_equal(served, gw.build_gateway(service, "envoy"))
    route = gw.build_route(service, [(cluster_of(rayservice(), "svc-a"), 100)])
    ref = dict(route["spec"]["rules"][0]["backendRefs"][0], group="", kind="Service")
    defaulted = {
        "spec": {**route["spec"], "rules": [{**route["spec"]["rules"][0], "backendRefs": [ref]}]}
    }
    defaulted["spec"]["parentRefs"] = [
        {
            "name": "svc-gateway",
            "namespace": "ns",
            "group": "gateway.networking.k8s.io",
            "kind": "Gateway",
        }
    ]
    assert gw.route_equal(defaulted, route)
    moved = gw.build_route(service, [(cluster_of(rayservice(), "svc-a"), 90)])
    assert not gw.route_equal(defaulted, moved)


def test_readiness_needs_the_implementations_conditions() -> None:
    gateway: Obj = {
        "metadata": {"name": "svc-gateway", "namespace": "ns"},
        "status": {"conditions": [{"type": "Accepted", "status": "True"}]},
    }
    assert not gw.gateway_ready(gateway)
    gateway["status"]["conditions"].append({"type": "Programmed", "status": "True"})
    assert gw.gateway_ready(gateway)
    route: Obj = {
        "status": {
            "parents": [
                {
                    "parentRef": {"name": "other"},
                    "conditions": [
                        {"type": "Accepted", "status": "True"},
                        {"type": "ResolvedRefs", "status": "True"},
                    ],
                }
            ]
        }
    }
    assert not gw.route_ready(gateway, route)
    route["status"]["parents"][0]["parentRef"] = {"name": "svc-gateway"}
    assert gw.route_ready(gateway, route)


def test_weights_wait_for_capacity_interval_and_readiness() -> None:
    at = NOW.strftime("%Y-%m-%dT%H:%M:%SZ")
    status = _status(
        {"targetCapacity": 100, "trafficRoutedPercent": 90},
        {"targetCapacity": 20, "trafficRoutedPercent": 10, "lastTrafficMigratedTime": at},
    )
    assert next_weights(status, OPTIONS, pending_ready=True, now=NOW + timedelta(seconds=29)) == (
        90,
        10,
    )
    assert next_weights(status, OPTIONS, pending_ready=True, now=NOW + timedelta(seconds=30)) == (
        80,
        20,
    )
    assert next_weights(status, OPTIONS, pending_ready=False, now=NOW + timedelta(seconds=60)) == (
        90,
        10,
    )
    status["pendingServiceStatus"]["targetCapacity"] = 10
    assert next_weights(status, OPTIONS, pending_ready=True, now=NOW + timedelta(seconds=60)) == (
        90,
        10,
    )


def test_rollback_moves_traffic_back_whether_or_not_the_new_cluster_is_ready() -> None:
    status = _status(
        {"targetCapacity": 100, "trafficRoutedPercent": 70},
        {"targetCapacity": 30, "trafficRoutedPercent": 30},
        "RollbackInProgress",
    )
    assert next_weights(status, OPTIONS, pending_ready=False, now=NOW) == (80, 20)


def test_capacity_moves_within_max_surge_once_traffic_caught_up() -> None:
    status = _status({"targetCapacity": 100}, {"targetCapacity": 0, "trafficRoutedPercent": 0})
    assert goal_capacity(status, "p", 10) == 10
    assert goal_capacity(status, "a", 10) is None
    status["pendingServiceStatus"].update(targetCapacity=10)
    assert goal_capacity(status, "a", 10) is None  # the route has not caught up yet
    status["pendingServiceStatus"].update(trafficRoutedPercent=10)
    assert goal_capacity(status, "a", 10) == 90
    assert goal_capacity(status, "p", 10) is None
    fresh: Obj = {
        "activeServiceStatus": {"rayClusterName": "a"},
        "pendingServiceStatus": {"rayClusterName": "p"},
    }
    assert goal_capacity(fresh, "p", 10) == 10
    assert fresh["activeServiceStatus"]["targetCapacity"] == 100


def test_capacity_waits_for_a_ready_gateway_and_route_with_kuberays_reasons() -> None:
    status = _status(
        {"targetCapacity": 100, "trafficRoutedPercent": 100},
        {"targetCapacity": 0, "trafficRoutedPercent": 0},
    )
    assert needs_update(status, RouteState(gateway_error="not found")) == (
        False,
        "Failed to retrieve Gateway for RayService: not found",
    )
    gateway: Obj = {"metadata": {"name": "svc-gateway", "namespace": "ns"}, "status": {}}
    assert needs_update(status, RouteState(gateway=gateway))[1] == (
        "Gateway for RayService NewClusterWithIncrementalUpgrade is not ready."
    )
    gateway["status"] = {
        "conditions": [
            {"type": "Accepted", "status": "True"},
            {"type": "Programmed", "status": "True"},
        ]
    }
    route = {
        "status": {
            "parents": [
                {
                    "parentRef": {"name": "svc-gateway"},
                    "conditions": [
                        {"type": "Accepted", "status": "True"},
                        {"type": "ResolvedRefs", "status": "True"},
                    ],
                }
            ]
        }
    }
    assert needs_update(status, RouteState(gateway=gateway, route=route)) == (
        True,
        "Pending RayCluster has not finished scaling up.",
    )
    done = _status(
        {"targetCapacity": 0, "trafficRoutedPercent": 0},
        {"targetCapacity": 100, "trafficRoutedPercent": 100},
    )
    assert needs_update(done, RouteState(gateway=gateway, route=route))[0] is False


def test_rollback_decision_and_completion() -> None:
    assert rollback_decision("h1", "h1", "h2", False) == "start-reverted"
    assert rollback_decision("h3", "h1", "h2", False) == "start-changed"
    assert rollback_decision("h2", "h1", "h2", True) == "cancel"
    assert rollback_decision("h1", "h1", "h2", True) == ""
    back = _status(
        {"targetCapacity": 100, "trafficRoutedPercent": 100},
        {"targetCapacity": 10, "trafficRoutedPercent": 0},
    )
    healthy = {"status": {"conditions": [{"type": "HeadPodReady", "status": "True"}]}}
    assert not rollback_complete(back, healthy)
    assert rollback_complete(back, {"status": {}})  # a new cluster whose head is gone
    back["pendingServiceStatus"]["targetCapacity"] = 0
    assert rollback_complete(back, healthy)


def test_the_gate_decides_both_the_mode_and_whether_a_new_cluster_is_prepared() -> None:
    spec = _service().spec
    on, off = (
        OperatorOptions(),
        OperatorOptions(feature_gates=FeatureGates(ray_service_incremental_upgrade=False)),
    )
    assert is_incremental(spec, on) and cs.zero_downtime_enabled(spec, on)
    assert not is_incremental(spec, off) and not cs.zero_downtime_enabled(spec, off)
