"""deploy/: generated CRDs and RBAC are current, kustomize renders it all, the Deployment is safe."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rayop.advise.prometheus_rules import rule_groups
from rayop.api.crds import build_crds
from rayop.controllers.assembly.rbac_rules import (
    AUTOSCALER_ROLE_RULES,
    VERB_ORDER,
    PolicyRule,
    cluster_role_rules,
    leader_election_rules,
    sharding_lease_rules,
    sharding_rules,
)
from rayop.controllers.assembly.sharding import CHILD_RESOURCES, RESOURCE_OF_KIND

from .manifests import DEPLOY, find, flag_values, load_yaml, operator_container, parse_run_args

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"


def all_docs() -> list[dict[str, Any]]:
    """The documents of the base kustomization's resources (the components under deploy/,
    such as monitoring/, webhooks/ and batch-schedulers/, are opt-in overlays)."""
    base = load_yaml(DEPLOY / "kustomization.yaml")[0]
    return [doc for rel in base["resources"] for doc in load_yaml(DEPLOY / rel)]


def kustomize(directory: Path) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [KUBECTL, "kustomize", str(directory)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return [doc for doc in yaml.load_all(proc.stdout, Loader=yaml.CSafeLoader) if doc]


def test_checked_in_crds_equal_the_generated_ones() -> None:
    """Fails when the API types changed without `python deploy/generate.py`."""
    checked_in = sorted(
        (doc for path in (DEPLOY / "crds").glob("*.yaml") for doc in load_yaml(path)),
        key=lambda crd: crd["metadata"]["name"],
    )
    expected = sorted(build_crds(), key=lambda crd: crd["metadata"]["name"])
    assert [c["metadata"]["name"] for c in checked_in] == [c["metadata"]["name"] for c in expected]
    for have, want in zip(checked_in, expected, strict=True):
        assert have == want, f"{have['metadata']['name']} is stale: run deploy/generate.py"


def test_cluster_role_grants_exactly_the_rules_source() -> None:
    role = find(load_yaml(DEPLOY / "rbac" / "cluster_role.yaml"), "ClusterRole", "rayop")
    assert role["rules"] == cluster_role_rules(), "stale: run deploy/generate.py"
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    # Spot checks of what the RayCluster controller needs, and of what it must not get.
    assert ("", "pods", "deletecollection") not in granted
    assert ("ray.io", "rayclusters/status", "update") in granted
    assert ("events.k8s.io", "events", "patch") in granted
    assert ("coordination.k8s.io", "leases", "update") not in granted  # namespaced Role only
    assert not any(verb == "*" or resource == "*" for _, resource, verb in granted)
    assert ("", "secrets", "delete") not in granted


def test_operator_holds_every_grant_of_the_autoscaler_role_it_creates() -> None:
    """The API server refuses a Role that grants more than its creator holds (no escalation)."""
    role = find(load_yaml(DEPLOY / "rbac" / "cluster_role.yaml"), "ClusterRole", "rayop")
    granted = {
        (g, r, v) for rule in role["rules"]
        for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]
    }  # fmt: skip
    delegated = {
        (g, r, v) for rule in AUTOSCALER_ROLE_RULES
        for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]
    }  # fmt: skip
    assert delegated
    assert delegated <= granted, delegated - granted


def test_leader_election_role_is_namespaced_to_leases() -> None:
    role = find(load_yaml(DEPLOY / "rbac" / "leader_election_role.yaml"), "Role")
    assert role["rules"] == leader_election_rules()
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]}
    ]  # fmt: skip


def test_rules_merge_verbs_of_controllers_sharing_a_resource() -> None:
    rules = cluster_role_rules(
        {
            "a": (PolicyRule("", ("services",), ("get", "create")),),
            "b": (PolicyRule("", ("services",), ("patch", "get")),),
        }
    )
    assert rules == [
        {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "create", "patch"]}
    ]
    with pytest.raises(ValueError, match="unknown verbs"):
        PolicyRule("", ("pods",), ("escalate",))
    assert set(VERB_ORDER) >= {v for r in cluster_role_rules() for v in r["verbs"]}


def test_bindings_give_the_roles_to_the_operator_service_account() -> None:
    docs = all_docs()
    account = find(docs, "ServiceAccount")
    deployment = find(docs, "Deployment", "rayop")
    assert (
        deployment["spec"]["template"]["spec"]["serviceAccountName"] == account["metadata"]["name"]
    )
    for kind, role_kind, role in [
        ("ClusterRoleBinding", "ClusterRole", "rayop"),
        ("RoleBinding", "Role", "rayop-leader-election"),
    ]:
        binding = find(docs, kind)
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role
        }  # fmt: skip
        (subject,) = binding["subjects"]
        assert subject["kind"] == "ServiceAccount"
        assert subject["name"] == account["metadata"]["name"]
        assert subject["namespace"] == "rayop-system"


def test_kustomizations_list_every_manifest_and_nothing_missing() -> None:
    listed: set[Path] = set()
    for kustomization in DEPLOY.rglob("kustomization.yaml"):
        spec = yaml.safe_load(kustomization.read_text())
        for entry in spec.get("resources", []):
            path = (kustomization.parent / entry).resolve()
            assert path.exists(), f"{kustomization} lists missing {entry}"
            if path.is_file():
                listed.add(path)
    manifests = {
        p.resolve()
        for p in DEPLOY.rglob("*.yaml")
        if p.name != "kustomization.yaml" and p.name != "concurrency_rules.yaml"
    }
    assert manifests - listed == set(), "manifests no kustomization lists"


def test_the_plain_rules_file_is_the_prometheus_rule_spec() -> None:
    """deploy/monitoring/concurrency_rules.yaml is no Kubernetes object: Prometheus loads it."""
    plain = yaml.safe_load((DEPLOY / "monitoring" / "concurrency_rules.yaml").read_text())
    resource = yaml.safe_load((DEPLOY / "monitoring" / "prometheus_rule.yaml").read_text())
    assert plain == resource["spec"] == rule_groups()


def test_kustomize_renders_the_operator_in_its_namespace() -> None:
    docs = kustomize(DEPLOY)
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == sorted(
        ["Namespace", "ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding",
         "Service", "Deployment"] + ["CustomResourceDefinition"] * 4
    )  # fmt: skip
    for doc in docs:
        if doc["kind"] in {"ServiceAccount", "Role", "RoleBinding", "Service", "Deployment"}:
            assert doc["metadata"]["namespace"] == "rayop-system", doc["kind"]
    assert operator_container(find(docs, "Deployment"))["image"] == "rayop:0.1.0"


def test_monitoring_component_adds_a_service_monitor_for_the_metrics_service(
    tmp_path: Path,
) -> None:
    base = os.path.relpath(DEPLOY, tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        f"resources:\n- {base}\ncomponents:\n- {base}/monitoring\n"
    )
    docs = kustomize(tmp_path)
    monitor = find(docs, "ServiceMonitor")
    service = find(docs, "Service", "rayop-metrics")
    assert monitor["metadata"]["namespace"] == "rayop-system"
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["path"] == "/metrics"
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}


def test_sharding_component_runs_three_sharded_replicas_with_the_rules_they_need(
    tmp_path: Path,
) -> None:
    base = os.path.relpath(DEPLOY, tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        f"resources:\n- {base}\ncomponents:\n- {base}/sharding\n"
    )
    docs = kustomize(tmp_path)
    deployment = find(docs, "Deployment")
    assert deployment["spec"]["replicas"] == 3
    container = operator_container(deployment)
    assert container["args"][-2:] == ["--sharding=true", "--replica-id=$(POD_NAME)"]
    pod_name = {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    assert pod_name in container["env"]
    assert find(docs, "ClusterRole", "rayop-sharding")["rules"] == sharding_rules()
    leases = find(docs, "Role", "rayop-sharding-leases")
    assert leases["metadata"]["namespace"] == "rayop-system"
    assert leases["rules"] == sharding_lease_rules()
    for kind, name in (
        ("ClusterRoleBinding", "rayop-sharding"),
        ("RoleBinding", "rayop-sharding-leases"),
    ):
        binding = find(docs, kind, name)
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "rayop", "namespace": "rayop-system"}
        ]


def test_sharding_rules_cover_every_resource_the_sharder_relabels() -> None:
    granted = {(g, r, v) for rule in sharding_rules() for g in rule["apiGroups"]
               for r in rule["resources"] for v in rule["verbs"]}  # fmt: skip
    for resource in (*CHILD_RESOURCES, *RESOURCE_OF_KIND.values()):
        for verb in ("list", "patch"):
            assert (resource.group, resource.plural, verb) in granted, (resource, verb)
    election = {
        (r, v) for rule in sharding_lease_rules() for r in rule["resources"] for v in rule["verbs"]
    }
    assert election == {("leases", "list"), ("leases", "delete")}  # read all; forget the gone


def test_metrics_service_targets_the_operator_pod_on_8080() -> None:
    docs = all_docs()
    service = find(docs, "Service", "rayop-metrics")
    deployment = find(docs, "Deployment", "rayop")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    (port,) = service["spec"]["ports"]
    container_ports = {
        p["name"]: p["containerPort"] for p in operator_container(deployment)["ports"]
    }
    assert port["port"] == 8080 and container_ports[port["targetPort"]] == 8080


def test_deployment_runs_rayop_with_kuberay_defaults_and_leader_election() -> None:
    container = operator_container(find(all_docs(), "Deployment", "rayop"))
    assert container["command"] == ["rayop", "run"]
    flags = flag_values([a for a in container["args"] if a.startswith("--") and "=" in a])
    assert flags["enable-leader-election"] == "true"
    assert flags["enable-metrics"] == "true"
    assert flags["health-probe-bind-address"] == ":8082"
    params = parse_run_args(container["args"])
    assert params["reconcile_concurrency"] == 1
    assert (params["qps"], params["burst"]) == (100.0, 200)
    assert params["metrics_addr"] == ":8080"  # KubeRay's default, not rendered
    assert container["args"][:2] == ["--log-stdout-encoder", "json"]


def test_deployment_probes_and_security_context() -> None:
    deployment = find(all_docs(), "Deployment", "rayop")
    pod = deployment["spec"]["template"]["spec"]
    container = operator_container(deployment)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        check = container[probe]["httpGet"]
        assert check["path"] == path
        assert ports[check["port"]] == 8082
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    context = container["securityContext"]
    assert context["runAsNonRoot"] is True
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"]["drop"] == ["ALL"]
    assert {"cpu", "memory"} <= container["resources"]["requests"].keys()
    assert "memory" in container["resources"]["limits"]
    # The read-only root filesystem still needs a writable /tmp.
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]


def test_generator_reports_nothing_stale() -> None:
    proc = subprocess.run(
        [sys.executable, str(DEPLOY / "generate.py"), "--check"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_dashboard_reads_the_rules_recorded_series() -> None:
    """Every recorded series a panel of deploy/monitoring/grafana_dashboard.json reads exists."""
    recorded = {
        rule["record"]
        for group in rule_groups()["groups"]
        for rule in group["rules"]
        if "record" in rule
    }
    doc = json.loads((DEPLOY / "monitoring" / "grafana_dashboard.json").read_text())
    used = {
        token
        for panel in doc["panels"]
        for target in panel["targets"]
        for token in re.findall(r"[a-z_]+:[a-z_0-9]+:[a-z_0-9]+", target["expr"])
    }
    assert used and used <= recorded, used - recorded
    assert len(doc["panels"]) == 8
