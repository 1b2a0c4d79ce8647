"""helm/rayop: rendered (see helm_render.py) with default and custom values."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from helm_render import CHART, HELPERS, TemplateError, render_chart, render_manifests, render_text
from manifests import DEPLOY, find, flag_values, load_yaml, operator_container, parse_run_args

from rayop.api.crds import build_crds
from rayop.controllers.common.rbac_rules import cluster_role_rules, leader_election_rules


def test_default_render_has_every_object_and_no_service_monitor() -> None:
    docs = render_manifests()
    assert sorted(d["kind"] for d in docs) == sorted(
        ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
         "Deployment", "Service"]
    )  # fmt: skip
    for doc in docs:
        if doc["kind"] not in {"ClusterRole", "ClusterRoleBinding"}:
            assert doc["metadata"]["namespace"] == "rayop-system", doc["kind"]


def test_chart_rbac_equals_the_rules_source() -> None:
    docs = render_manifests()
    assert find(docs, "ClusterRole")["rules"] == cluster_role_rules()
    assert find(docs, "Role")["rules"] == leader_election_rules()


def test_chart_crds_equal_the_generated_ones() -> None:
    crds = [doc for path in sorted((CHART / "crds").glob("*.yaml")) for doc in load_yaml(path)]
    by_name = {crd["metadata"]["name"]: crd for crd in crds}
    assert by_name == {crd["metadata"]["name"]: crd for crd in build_crds()}


def test_default_values_give_the_same_operator_arguments_as_deploy() -> None:
    chart = operator_container(find(render_manifests(), "Deployment"))
    kustomize = operator_container(
        find(load_yaml(DEPLOY / "manager" / "deployment.yaml"), "Deployment")
    )
    assert chart["command"] == kustomize["command"] == ["rayop", "run"]
    assert chart["args"] == kustomize["args"]
    for key in ("livenessProbe", "readinessProbe", "securityContext", "resources", "ports"):
        assert chart[key] == kustomize[key], key


def test_values_named_like_kuberays_chart_reach_the_operator_flags() -> None:
    docs = render_manifests(
        {
            "image": {"repository": "registry.example/rayop", "tag": "v9", "pullPolicy": "Always"},
            "reconcileConcurrency": 16,
            "kubeClient": {"qps": 50.0, "burst": 75},
            "leaderElectionEnabled": False,
            "watchNamespace": ["team-a", "team-b"],
            "featureGates": [
                {"name": "RayClusterStatusConditions", "enabled": True},
                {"name": "RayJobDeletionPolicy", "enabled": False},
            ],
            "logging": {"level": "debug", "format": "console"},
            "env": [{"name": "ENABLE_INIT_CONTAINER_INJECTION", "value": "false"}],
        }
    )
    container = operator_container(find(docs, "Deployment"))
    assert container["image"] == "registry.example/rayop:v9"
    assert container["imagePullPolicy"] == "Always"
    assert container["env"][1:] == [{"name": "ENABLE_INIT_CONTAINER_INJECTION", "value": "false"}]
    assert container["env"][0]["name"] == "POD_NAMESPACE"
    flags = flag_values(container["args"])
    assert flags["reconcile-concurrency"] == "16"
    assert (flags["qps"], flags["burst"]) == ("50", "75")
    assert flags["enable-leader-election"] == "false"
    assert flags["watch-namespace"] == "team-a,team-b"
    assert flags["feature-gates"] == "RayClusterStatusConditions=true,RayJobDeletionPolicy=false"
    params = parse_run_args(container["args"])
    assert params["reconcile_concurrency"] == 16
    assert params["log_level"] == "debug" and params["log_format"] == "console"


def test_service_monitor_selects_the_metrics_service_when_enabled() -> None:
    docs = render_manifests(
        {"metrics": {"serviceMonitor": {"enabled": True, "additionalLabels": {"release": "prom"}}}}
    )
    monitor = find(docs, "ServiceMonitor")
    service = find(docs, "Service")
    assert monitor["metadata"]["labels"]["release"] == "prom"
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["rayop-system"]}
    pod_labels = find(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()


def test_existing_service_account_and_name_override() -> None:
    docs = render_manifests(
        {"serviceAccount": {"create": False, "name": "ops"}, "fullnameOverride": "ray-op"},
        release="r1",
    )
    assert not [d for d in docs if d["kind"] == "ServiceAccount"]
    assert find(docs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "ops"
    binding = find(docs, "ClusterRoleBinding", "ray-op")
    assert binding["subjects"][0]["name"] == "ops"
    assert binding["roleRef"]["name"] == find(docs, "ClusterRole")["metadata"]["name"] == "ray-op"
    assert find(docs, "RoleBinding")["roleRef"]["name"] == find(docs, "Role")["metadata"]["name"]


def test_every_value_in_values_yaml_is_used_by_a_template() -> None:
    texts = "\n".join(p.read_text() for p in (CHART / "templates").iterdir())
    values = yaml.safe_load((CHART / "values.yaml").read_text())

    def paths(node: Any, prefix: str) -> list[str]:
        if isinstance(node, dict) and node and prefix not in USED_WHOLE:
            return [p for key, value in node.items() for p in paths(value, f"{prefix}.{key}")]
        return [prefix]

    USED_WHOLE = {".Values.resources", ".Values.podSecurityContext", ".Values.securityContext",
                  ".Values.livenessProbe", ".Values.readinessProbe"}  # fmt: skip
    unused = [p for p in paths(values, ".Values") if p not in texts]
    assert unused == []


def test_helpers_named_in_the_chart_are_the_rendered_ones() -> None:
    helpers = (CHART / "templates" / "_helpers.tpl").read_text()
    assert set(re.findall(r'define "([^"]+)"', helpers)) == set(HELPERS)


def test_renderer_follows_go_trimming_and_rejects_what_it_does_not_know() -> None:
    assert render_text("a:\n  {{- if .Values.replicas }}\n  b: 1\n  {{- end }}\n") == "a:\n  b: 1\n"
    assert render_text("x: {{ .Values.kubeClient.qps }} {{ .Values.leaderElectionEnabled }}") == (
        "x: 100 true"
    )
    assert render_text('{{ .Values.image.tag | default "latest" | quote }}') == '"latest"'
    assert render_text("{{ if .Values.env }}e{{ else }}none{{ end }}") == "none"
    with pytest.raises(TemplateError, match="not set"):
        render_text("{{ .Values.nope }}")
    with pytest.raises(TemplateError, match="unknown function"):
        render_text("{{ tpl .Values.image .Values.env }}")


def test_templates_render_to_valid_yaml_for_every_toggle() -> None:
    toggles: list[dict[str, Any]] = [
        {},
        {"metrics": {"serviceMonitor": {"enabled": True}}},
        {"serviceAccount": {"create": False}},
        {"nodeSelector": {"pool": "ops"}, "tolerations": [{"key": "k", "operator": "Exists"}],
         "affinity": {"nodeAffinity": {}}, "podAnnotations": {"a": "b"}},
    ]  # fmt: skip
    for overrides in toggles:
        for name, text in render_chart(overrides).items():
            for doc in yaml.safe_load_all(text):
                assert doc is None or {"apiVersion", "kind", "metadata"} <= doc.keys(), name
