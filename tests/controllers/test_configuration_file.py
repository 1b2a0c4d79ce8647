"""KubeRay's Configuration file: defaults, strict types, and every problem with its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from rayop.controllers.config.configuration_file import (
    ConfigurationError,
    load_configuration,
    parse_configuration,
)

HEADER = "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\n"


def issues(text: str) -> list[str]:
    with pytest.raises(ConfigurationError) as caught:
        parse_configuration(text, path="c.yaml")
    return [issue.render("c.yaml") for issue in caught.value.issues]


def test_an_empty_configuration_gets_kuberays_defaults() -> None:
    config = parse_configuration(HEADER)
    assert (config.metrics_addr, config.probe_addr) == (":8080", ":8082")
    assert config.enable_leader_election is True
    assert (config.reconcile_concurrency, config.qps, config.burst) == (1, 100.0, 200)
    assert not config.use_kubernetes_proxy and not config.enable_metrics
    assert not config.pod_defaults()


def test_every_field_of_kuberays_type_is_read() -> None:
    config = parse_configuration(
        HEADER
        + """\
metricsAddr: ":9080"
probeAddr: ":9082"
enableLeaderElection: false
leaderElectionNamespace: ops
reconcileConcurrency: 3
watchNamespace: "a,b"
logFile: /tmp/kuberay.log
logFileEncoder: console
logStdoutEncoder: json
enableBatchScheduler: false
batchScheduler: ""
headSidecarContainers: [{name: a, image: i}]
workerSidecarContainers: [{name: b, image: i}]
defaultContainerEnvs: [{name: E, value: v}]
defaultPodAnnotations: {k: v}
defaultPodLabels: {l: v}
useKubernetesProxy: true
deleteRayJobAfterJobFinishes: true
enableMetrics: true
qps: 50
burst: 70
"""
    )
    assert config.metrics_addr == ":9080" and config.enable_leader_election is False
    assert config.reconcile_concurrency == 3 and config.qps == 50.0 and config.burst == 70
    assert config.watch_namespace == "a,b" and config.log_file == "/tmp/kuberay.log"
    assert config.use_kubernetes_proxy and config.enable_metrics
    defaults = config.pod_defaults()
    assert defaults.head_sidecars == ({"name": "a", "image": "i"},)
    assert defaults.worker_sidecars == ({"name": "b", "image": "i"},)
    assert defaults.container_envs == ({"name": "E", "value": "v"},)
    assert dict(defaults.labels) == {"l": "v"} and dict(defaults.annotations) == {"k": "v"}


def test_zero_and_empty_values_count_as_unset_as_in_go() -> None:
    config = parse_configuration(HEADER + 'metricsAddr: ""\nreconcileConcurrency: 0\nqps: null\n')
    assert config.metrics_addr == ":8080" and config.reconcile_concurrency == 1
    assert config.qps == 100.0


def test_unknown_fields_and_wrong_types_name_the_file_line_and_field() -> None:
    found = issues(
        HEADER
        + """\
qps: "5"
enableMetrics: "true"
headSidecarContainers:
- name: fluentbit
  image: fluent/fluent-bit:1.9.6
  imagePullPolicy: Always
  bogus: 1
metricAddr: ":8080"
"""
    )
    assert found == [
        "c.yaml:3:1: qps: Input should be a valid number",
        "c.yaml:4:1: enableMetrics: Input should be a valid boolean",
        "c.yaml:9:3: headSidecarContainers[0].bogus: unknown field",
        "c.yaml:10:1: metricAddr: unknown field",
    ]


def test_a_file_that_does_not_parse_names_the_line() -> None:
    (only,) = issues(HEADER + "defaultPodLabels: {team: platform\n")
    assert only.startswith("c.yaml:4:1: ") or only.startswith("c.yaml:3:")
    assert "expected ',' or '}'" in only


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "expected one Configuration mapping, found 0 documents"),
        ("- 1\n", "expected one Configuration mapping, found a sequence"),
        (HEADER + "---\n" + HEADER, "found 2 documents"),
        ("kind: Configuration\n", "apiVersion: Field required"),
        ("apiVersion: v1\nkind: Configuration\n", "must be 'config.ray.io/v1alpha1', got 'v1'"),
        ("apiVersion: config.ray.io/v1alpha1\nkind: Config\n", "kind: must be 'Configuration'"),
    ],
)
def test_what_is_not_one_configuration_is_refused(text: str, message: str) -> None:
    assert any(message in line for line in issues(text)), issues(text)


def test_sidecars_that_would_make_invalid_pods_are_refused_whole() -> None:
    found = issues(
        HEADER
        + """\
headSidecarContainers:
- name: fluentbit
  image: a
- name: fluentbit
  image: b
- name: autoscaler
  image: c
- name: Bad_Name
  image: d
workerSidecarContainers:
- name: wait-gcs-ready
  image: e
- name: nope
"""
    )
    assert found[0] == (
        "c.yaml:6:3: headSidecarContainers[1].name: Duplicate value: 'fluentbit': "
        "another sidecar has this name"
    )
    assert found[1].startswith("c.yaml:8:3: headSidecarContainers[2].name: Duplicate value:")
    assert found[2].startswith("c.yaml:10:3: headSidecarContainers[3].name: Invalid value:")
    assert "RFC 1123 label" in found[2]
    assert found[3].startswith("c.yaml:13:3: workerSidecarContainers[0].name: Duplicate value")
    assert found[4] == "c.yaml:15:3: workerSidecarContainers[1].image: Required value"
    assert len(found) == 5


def test_env_labels_and_annotations_that_kubernetes_refuses_are_refused() -> None:
    found = issues(
        HEADER
        + """\
defaultContainerEnvs:
- name: "A=B"
  value: x
- name: OK
  value: x
  valueFrom: {fieldRef: {fieldPath: metadata.name}}
defaultPodLabels:
  team: "has space"
  "a/b/c": v
defaultPodAnnotations:
  "-bad": v
"""
    )
    assert found[0].startswith("c.yaml:4:3: defaultContainerEnvs[0].name: Invalid value: 'A=B'")
    assert found[1].startswith("c.yaml:8:3: defaultContainerEnvs[1].valueFrom: Invalid value")
    assert found[2].startswith("c.yaml:10:3: defaultPodLabels.team: Invalid value: 'has space'")
    assert found[3].startswith("c.yaml:11:3: defaultPodLabels.a/b/c: Invalid value")
    assert found[4].startswith("c.yaml:13:3: defaultPodAnnotations.-bad: Invalid value")
    assert len(found) == 5


def test_negative_concurrency_or_burst_is_refused() -> None:
    found = issues(HEADER + "reconcileConcurrency: -1\nburst: -2\n")
    assert found == [
        "c.yaml:3:1: reconcileConcurrency: Invalid value: -1: must be a positive integer",
        "c.yaml:4:1: burst: Invalid value: -2: must be a non-negative integer",
    ]


def test_load_reads_the_file_and_names_it(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(HEADER + "qps: 5\n")
    assert load_configuration(path).qps == 5.0
    with pytest.raises(ConfigurationError, match=r"missing\.yaml:1:1: cannot read"):
        load_configuration(tmp_path / "missing.yaml")
