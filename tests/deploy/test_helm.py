"""helm/rayop, by real Helm: lint and template in every values mode, RBAC per mode, KubeRay parity.

Skipped, with how to build helm, when ``scripts/controlplane-build helm`` has not run here; the
real tier (tests/real/test_rayop_chart.py) builds helm and runs the same modes without skipping.
KubeRay v1.7.0's own chart, given the same values, is the reference for the arguments, the
Configuration file and where each RBAC object goes.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from rayop.advise.prometheus_rules import rule_groups
from rayop.api.crds import build_crds
from rayop.controllers.assembly.rbac_rules import (
    cluster_role_rules,
    leader_election_rules,
    sharding_lease_rules,
    sharding_rules,
)
from rayop.controllers.batchscheduler.rbac import BATCH_SCHEDULER_RULES
from tests.kuberay_compat import helm_chart_dir

from .chart_modes import (
    KUBERAY_COMPARABLE,
    MODES,
    SIDECAR,
    Values,
    namespaced,
    rbac_namespaces,
    sharded,
)
from .helm_cli import (
    CHART,
    NAMESPACE,
    HelmError,
    by_kind,
    deployment_container,
    lint,
    missing_helm_reason,
    template,
    template_text,
)
from .manifests import DEPLOY, find, load_yaml, operator_container, parse_run_args

pytestmark = pytest.mark.skipif(bool(missing_helm_reason()), reason=missing_helm_reason())

Obj = dict[str, Any]

RAYOP_ONLY_ARGS = ("--health-probe-bind-address=", "--use-priority-queue=", "--log-level=")
"""The flags rayop's chart renders after KubeRay's (its `rayop:` values)."""

RBAC_KINDS = ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
USER_ROLES = sorted(
    f"{k}-{r}-role" for k in ("rayjob", "rayservice", "raycronjob") for r in ("editor", "viewer")
)


@pytest.mark.parametrize("mode", MODES)
def test_chart_lints_strictly_in_every_mode(mode: str) -> None:
    assert "1 chart(s) linted, 0 chart(s) failed" in lint(MODES[mode])


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_renders_an_operator_rayop_run_accepts(mode: str) -> None:
    values = MODES[mode]
    objects = template(values)
    for obj in objects:
        assert {"apiVersion", "kind", "metadata"} <= obj.keys(), obj
    container = deployment_container(objects)
    assert container["command"] == ["rayop", "run"]
    params = parse_run_args(container["args"])
    if not (values.get("configuration") or {}).get("enabled"):
        concurrency = values.get("reconcileConcurrency", 1)
        assert params["reconcile_concurrency"] == concurrency
    for obj in objects:
        if obj["kind"] in {"ClusterRole", "ClusterRoleBinding"}:
            assert "namespace" not in obj["metadata"]
        elif obj["kind"] in {"Role", "RoleBinding"} and obj["metadata"]["name"] == "rayop":
            assert obj["metadata"]["namespace"] in rbac_namespaces(values, NAMESPACE)
        elif obj["kind"] in {"ServiceMonitor", "PrometheusRule"}:
            assert obj["metadata"]["namespace"] == "monitoring"
        else:
            assert obj["metadata"]["namespace"] == NAMESPACE, obj["kind"]


def _rbac(objects: list[Obj]) -> dict[tuple[str, str, str], Obj]:
    return {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
        for o in objects
        if o["kind"] in RBAC_KINDS
    }


def operator_rules(values: Values) -> list[dict[str, Any]]:
    """The operator's rules for ``values``: rayop's own, then those of the batch schedulers the
    chart is installed for, in the chart's order and with its alphabetical verbs (as KubeRay's
    chart: the ``KubernetesWAS`` gate; ``batchScheduler.enabled``, the legacy switch, grants
    Volcano's and scheduler-plugins'; ``batchScheduler.name`` grants that one's)."""
    scheduler = values.get("batchScheduler") or {}
    gates = values.get("featureGates") or []
    legacy, name = scheduler.get("enabled"), scheduler.get("name")
    names = []
    if any(g.get("name") == "KubernetesWAS" and g.get("enabled") for g in gates):
        names.append("kubernetes-was")
    names += [n for n in ("volcano", "scheduler-plugins") if legacy or name == n]
    extra = [
        {"apiGroups": [r.api_group], "resources": list(r.resources), "verbs": sorted(r.verbs)}
        for n in names
        for r in BATCH_SCHEDULER_RULES[n]
    ]
    return cluster_role_rules() + extra + (sharding_rules() if sharded(values) else [])


@pytest.mark.parametrize("mode", MODES)
def test_rbac_of_every_mode_is_the_rules_source_where_kuberay_puts_it(mode: str) -> None:
    values = MODES[mode]
    rbac = _rbac(template(values))
    account = (values.get("serviceAccount") or {}).get("name", "rayop")
    subject = [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}]
    expected: set[tuple[str, str, str]] = set()
    if values.get("rbacEnable", True):
        expected |= {
            ("Role", NAMESPACE, "rayop-leader-election"),
            ("RoleBinding", NAMESPACE, "rayop-leader-election"),
        }
        election = rbac[("Role", NAMESPACE, "rayop-leader-election")]
        lease_rules = sharding_lease_rules() if sharded(values) else []
        assert election["rules"] == leader_election_rules() + lease_rules
        assert rbac[("RoleBinding", NAMESPACE, "rayop-leader-election")]["subjects"] == subject
        if not namespaced(values):
            expected |= {("ClusterRole", "", "rayop"), ("ClusterRoleBinding", "", "rayop")}
            expected |= {("ClusterRole", "", name) for name in USER_ROLES}
            assert rbac[("ClusterRole", "", "rayop")]["rules"] == operator_rules(values)
            assert rbac[("ClusterRoleBinding", "", "rayop")]["subjects"] == subject
        elif values.get("crNamespacedRbacEnable", True):
            for namespace in rbac_namespaces(values, NAMESPACE):
                expected |= {("Role", namespace, "rayop"), ("RoleBinding", namespace, "rayop")}
                assert rbac[("Role", namespace, "rayop")]["rules"] == operator_rules(values)
                binding = rbac[("RoleBinding", namespace, "rayop")]
                assert binding["subjects"] == subject
                assert binding["roleRef"] == {
                    "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "rayop"
                }  # fmt: skip
    assert set(rbac) == expected


def _kuberay(values: Values) -> list[Obj]:
    return template(values, release="kuberay-operator", namespace=NAMESPACE, chart=helm_chart_dir())


@pytest.mark.parametrize("mode", KUBERAY_COMPARABLE)
def test_kuberays_chart_with_the_same_values_renders_the_args_rayops_starts_with(
    mode: str,
) -> None:
    values = MODES[mode]
    ours, theirs = template(values), _kuberay(values)
    our_args = deployment_container(ours)["args"]
    their_args = deployment_container(theirs)["args"]
    assert our_args[: len(their_args)] == their_args
    rest = our_args[len(their_args) :]
    expected = list(RAYOP_ONLY_ARGS)
    if (values.get("configuration") or {}).get("enabled"):
        expected.remove("--health-probe-bind-address=")  # the file's probeAddr applies
    if sharded(values):
        expected += ["--sharding=", "--replica-id="]
    assert [a.split("=", 1)[0] + "=" for a in rest] == expected


@pytest.mark.parametrize("mode", MODES)
def test_more_than_one_replica_shards_each_replica_named_after_its_pod(mode: str) -> None:
    values = MODES[mode]
    container = deployment_container(template(values))
    args = container["args"]
    if not sharded(values):
        assert not [a for a in args if a.startswith(("--sharding", "--replica-id"))]
        return
    assert args[-2:] == ["--sharding=true", "--replica-id=$(POD_NAME)"]
    pod_name = {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    assert pod_name in container["env"]


def test_sharding_mode_is_auto_true_or_false() -> None:
    with pytest.raises(HelmError, match=r"values\.rayop\.sharding must be auto, true or false"):
        template({"rayop": {"sharding": "sometimes"}})
    one = deployment_container(template({"rayop": {"sharding": True}}))
    assert "--sharding=true" in one["args"]


@pytest.mark.parametrize("mode", KUBERAY_COMPARABLE)
def test_rbac_objects_go_to_the_namespaces_kuberays_chart_puts_them_in(mode: str) -> None:
    values = MODES[mode]

    def places(objects: list[Obj]) -> set[tuple[str, str]]:
        return {
            (o["kind"], o["metadata"].get("namespace", ""))
            for o in objects
            if o["kind"] in RBAC_KINDS
        }

    assert places(template(values)) == places(_kuberay(values))


@pytest.mark.parametrize("mode", KUBERAY_COMPARABLE)
def test_pod_settings_and_configuration_equal_kuberays_for_the_same_values(mode: str) -> None:
    values = MODES[mode]
    ours, theirs = template(values), _kuberay(values)
    ours_pod = find(ours, "Deployment")["spec"]["template"]
    theirs_pod = find(theirs, "Deployment")["spec"]["template"]
    for key in ("imagePullSecrets", "priorityClassName", "nodeSelector", "affinity",
                "tolerations", "securityContext"):  # fmt: skip
        assert ours_pod["spec"].get(key) == theirs_pod["spec"].get(key), key
    for key in ("env", "resources", "securityContext"):
        mine = deployment_container(ours).get(key)
        if key == "env" and sharded(values):  # rayop's replica id: the pod's name
            mine = [e for e in mine or () if e["name"] != "POD_NAME"] or None
        assert mine == deployment_container(theirs).get(key), key
    for key in ("team", "owner"):
        for part in ("labels", "annotations"):
            mine = ours_pod["metadata"].get(part) or {}
            assert mine.get(key) == (theirs_pod["metadata"].get(part) or {}).get(key)
    assert (
        find(ours, "Deployment")["spec"]["replicas"]
        == find(theirs, "Deployment")["spec"]["replicas"]
    )
    assert find(ours, "Service")["spec"]["type"] == find(theirs, "Service")["spec"]["type"]
    assert (
        find(ours, "Service")["spec"]["ports"][0]["port"]
        == (find(theirs, "Service")["spec"]["ports"][0]["port"])
    )
    mine, kuberay = by_kind(ours, "ConfigMap"), by_kind(theirs, "ConfigMap")
    assert len(mine) == len(kuberay)
    if mine:
        ours_config = yaml.safe_load(mine[0]["data"]["config.yaml"])
        assert ours_config == yaml.safe_load(kuberay[0]["data"]["config.yaml"])


def test_configuration_mode_mounts_the_file_the_operator_is_pointed_at() -> None:
    objects = template(MODES["configuration"])
    container = deployment_container(objects)
    assert container["args"][:2] == ["--config", "/etc/kuberay/config.yaml"]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert mounts["operator-config"] == {
        "name": "operator-config", "mountPath": "/etc/kuberay", "readOnly": True
    }  # fmt: skip
    pod = find(objects, "Deployment")["spec"]["template"]
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    config_map = find(objects, "ConfigMap")
    assert volumes["operator-config"]["configMap"]["name"] == config_map["metadata"]["name"]
    config = yaml.safe_load(config_map["data"]["config.yaml"])
    assert config["apiVersion"] == "config.ray.io/v1alpha1"
    assert config["kind"] == "Configuration"
    assert config["headSidecarContainers"] == config["workerSidecarContainers"] == [SIDECAR]
    assert config["watchNamespace"] == "team-a"
    assert config["defaultPodLabels"] == {"team": "ml"}
    # A changed Configuration rolls the operator (it reads the file once, at startup).
    changed = template({**MODES["configuration"], "reconcileConcurrency": 3})
    checksum = "checksum/config"
    first = pod["metadata"]["annotations"][checksum]
    second = find(changed, "Deployment")["spec"]["template"]["metadata"]["annotations"][checksum]
    assert re.fullmatch("[0-9a-f]{64}", first) and first != second


def test_configuration_mode_puts_a_changed_health_port_in_the_file() -> None:
    values = {"configuration": {"enabled": True}, "rayop": {"healthProbePort": 9440}}
    objects = template(values)
    args = deployment_container(objects)["args"]
    assert not [a for a in args if a.startswith("--health-probe-bind-address")]
    config = yaml.safe_load(find(objects, "ConfigMap")["data"]["config.yaml"])
    assert config["probeAddr"] == ":9440"
    ports = {p["name"]: p["containerPort"] for p in deployment_container(objects)["ports"]}
    assert ports["health"] == 9440
    default = yaml.safe_load(
        find(template({"configuration": {"enabled": True}}), "ConfigMap")["data"]["config.yaml"]
    )
    assert "probeAddr" not in default  # KubeRay's default, :8082, as KubeRay's chart leaves it


def test_single_namespace_install_watches_the_release_namespace() -> None:
    args = deployment_container(template(MODES["singleNamespaceInstall"]))["args"]
    assert args[args.index("--watch-namespace") + 1] == NAMESPACE
    assert parse_run_args(args)["watch_namespace"] == NAMESPACE


def test_kuberays_own_values_file_carries_over_but_for_its_binary_and_image() -> None:
    kuberay_values: Values = yaml.safe_load((helm_chart_dir() / "values.yaml").read_text())
    with pytest.raises(HelmError, match="operatorCommand /manager is KubeRay's Go binary"):
        template(kuberay_values)
    carried = {**kuberay_values, "operatorCommand": "rayop", "image": {"repository": "rayop"}}
    objects = template(carried)
    assert "0 chart(s) failed" in lint(carried)
    assert find(objects, "Deployment")["metadata"]["name"] == "kuberay-operator"
    container = deployment_container(objects)
    assert (
        container["args"][: -len(RAYOP_ONLY_ARGS)]
        == deployment_container(_kuberay(kuberay_values))["args"]
    )
    parse_run_args(container["args"])


KUBECTL_RAY_SELECTOR = ("app.kubernetes.io/name", ("kuberay-operator", "kuberay"))
"""How `kubectl ray version` (KubeRay v1.7.0's plugin) finds the operator's Deployment, in any
namespace; it reports the tag of the Deployment's first container's image."""


def test_kuberays_names_let_kubectl_ray_version_find_the_operator() -> None:
    named: Values = {"nameOverride": "kuberay-operator", "fullnameOverride": "kuberay-operator"}
    objects = template(named)
    deployment = find(objects, "Deployment")
    label, accepted = KUBECTL_RAY_SELECTOR
    assert deployment["metadata"]["name"] == "kuberay-operator"
    assert deployment["metadata"]["labels"][label] in accepted
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == f"rayop:{chart['appVersion']}"
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert find(objects, "Service")["spec"]["selector"] == selector
    assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    default = find(template(), "Deployment")  # rayop's own names: the plugin finds nothing
    assert default["metadata"]["labels"][label] not in accepted


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"reconcileConcurrency": 0}, 'values.reconcileConcurrency must be a positive integer, got "0"'),
        ({"kubeClient": {"qps": "fast"}}, 'values.kubeClient.qps must be a valid float number, got "fast"'),
        ({"kubeClient": {"burst": -1}}, 'values.kubeClient.burst must be a non-negative integer, got "-1"'),
        ({"batchScheduler": {"enabled": True, "name": "yunikorn"}}, "set either enabled"),
    ],
)  # fmt: skip
def test_bad_values_stop_the_render_with_kuberays_message(values: Values, message: str) -> None:
    for chart_values in (values, {**values, "configuration": {"enabled": True}}):
        with pytest.raises(HelmError, match=re.escape(message)):
            template(chart_values)


def test_names_follow_the_release_without_overrides() -> None:
    unnamed: Values = {"nameOverride": "", "fullnameOverride": "", "serviceAccount": {"name": ""}}
    objects = template(unnamed, release="ml")
    assert find(objects, "Deployment")["metadata"]["name"] == "ml-rayop"
    assert find(objects, "ServiceAccount")["metadata"]["name"] == "ml-rayop"
    assert find(template(unnamed, release="rayop-prod"), "Deployment")["metadata"]["name"] == (
        "rayop-prod"
    )


def test_the_prometheus_rule_carries_the_generated_concurrency_rules_unchanged() -> None:
    objects = template(MODES["prometheusRule"])
    rule = find(objects, "PrometheusRule")
    assert rule["metadata"]["namespace"] == "monitoring"
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    assert rule["spec"] == rule_groups()  # Prometheus' {{ $labels }} templates survive Helm
    assert not [o for o in template() if o["kind"] == "PrometheusRule"]


def test_service_monitor_selects_the_service_that_selects_the_operator_pod() -> None:
    objects = template(MODES["serviceMonitor"])
    monitor, service = find(objects, "ServiceMonitor"), find(objects, "Service")
    pod = find(objects, "Deployment")["spec"]["template"]
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["targetPort"] == service["spec"]["ports"][0]["targetPort"] == "http"
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    ports = {p["name"]: p["containerPort"] for p in deployment_container(objects)["ports"]}
    assert ports["http"] == 8080


def test_probes_use_rayops_health_endpoints_with_kuberays_timing() -> None:
    container = deployment_container(template({"livenessProbe": {"periodSeconds": 7}}))
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert container["livenessProbe"]["periodSeconds"] == 7
    assert container["readinessProbe"]["failureThreshold"] == 5
    assert ports["health"] == 8082
    assert parse_run_args(container["args"])["health_probe_bind_address"] == ":8082"


def test_rayop_only_values_reach_their_flags() -> None:
    rayop = {"usePriorityQueue": False, "logLevel": "debug", "healthProbePort": 9440,
             "rayjobDashboardPollInterval": 3, "decisionEvents": True,
             "extraArgs": ["--zap-devel=true"]}  # fmt: skip
    container = deployment_container(template({"rayop": rayop}))
    params = parse_run_args(container["args"])
    assert params["rayjob_dashboard_poll_interval"] == 3.0
    assert "--decision-events=true" in container["args"] and params["decision_events"]
    assert "--rayjob-dashboard-poll-interval=3" in container["args"]
    assert params["use_priority_queue"] == "false"
    assert params["log_level"] == "debug"
    assert params["health_probe_bind_address"] == ":9440"
    assert container["args"][-1] == "--zap-devel=true"
    assert {p["name"]: p["containerPort"] for p in container["ports"]}["health"] == 9440


def test_default_render_runs_the_same_operator_as_deploy() -> None:
    chart = deployment_container(template())
    kustomize = operator_container(
        find(load_yaml(DEPLOY / "manager" / "deployment.yaml"), "Deployment")
    )
    assert chart["command"] == kustomize["command"] == ["rayop", "run"]
    assert chart["args"] == kustomize["args"]
    for key in ("livenessProbe", "readinessProbe", "securityContext", "ports"):
        assert chart[key] == kustomize[key], key


def test_chart_crds_equal_the_generated_ones() -> None:
    crds = [doc for path in sorted((CHART / "crds").glob("*.yaml")) for doc in load_yaml(path)]
    by_name = {crd["metadata"]["name"]: crd for crd in crds}
    assert by_name == {crd["metadata"]["name"]: crd for crd in build_crds()}


WHOLE_VALUES = {"resources", "securityContext", "podSecurityContext", "nodeSelector", "affinity",
                "labels", "annotations", "additionalLabels"}  # fmt: skip
"""Values that are a YAML block handed over as it is (changed as a whole by the test below)."""

PREREQUISITES: dict[str, Values] = {
    "logging.sizeLimit": {"logging": {"baseDir": "/var/log/ray", "fileName": "op.log"}},
    "logging.baseDir": {"logging": {"fileName": "op.log"}},
    "logging.fileName": {"logging": {"baseDir": "/var/log/ray"}},
    "metrics.serviceMonitor": {"metrics": {"serviceMonitor": {"enabled": True}}},
    "metrics.prometheusRule": {"metrics": {"prometheusRule": {"enabled": True}}},
    "configuration": {"configuration": {"enabled": True}},
    "crNamespacedRbacEnable": {"singleNamespaceInstall": True},
    "webhook": {"webhook": {"enabled": True}},
}
"""What must be set for a value to matter (the longest matching prefix of its path)."""


def _leaves(node: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    if isinstance(node, dict) and node and (not path or path[-1] not in WHOLE_VALUES):
        return [leaf for key, value in node.items() for leaf in _leaves(value, (*path, key))]
    return [(path, node)]


def _changed(path: tuple[str, ...], value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if path[-1] in WHOLE_VALUES or isinstance(value, dict):
        return {"example.com/changed": "yes"} if path[-1] in {"labels", "annotations",
               "additionalLabels", "nodeSelector"} else {"changed": {"by": "test"}}  # fmt: skip
    if isinstance(value, list) or value is None:
        if path[-1] == "featureGates":
            return [{"name": "RayClusterStatusConditions", "enabled": False}]
        if path[-1] in {"env", "defaultContainerEnvs"}:
            return [{"name": "CHANGED", "value": "yes"}]
        if path[-1] == "extraArgs":
            return ["--zap-devel=true"]
        return [{"name": "changed"}]
    if path[-1] == "sharding":  # "auto": one of auto, true, false
        return True
    return "changed" if path[-1] != "sizeLimit" else "2Gi"


def _nest(path: tuple[str, ...], value: Any) -> Values:
    for key in reversed(path):
        value = {key: value}
    return value  # type: ignore[no-any-return]


def _sets(values: Values, path: tuple[str, ...]) -> bool:
    node: Any = values
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def _merge(base: Values, extra: Values) -> Values:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def test_every_value_in_values_yaml_changes_the_render() -> None:
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    leaves = _leaves(defaults)
    assert len(leaves) > 40
    unused = []
    for path, value in leaves:
        dotted = ".".join(path)
        prefixes = [p for p in PREREQUISITES if dotted == p or dotted.startswith(p + ".")]
        base = PREREQUISITES[max(prefixes, key=len)] if prefixes else {}
        if _sets(base, path):  # the value is the switch its prerequisite turns on
            base = {}
        before = template_text(base)
        after = template_text(_merge(base, _nest(path, _changed(path, value))))
        if before == after:
            unused.append(dotted)
    assert unused == []
