"""The Configuration's pod defaults on head and worker pods, placed and ordered as KubeRay does."""

from __future__ import annotations

import dataclasses
from typing import Any

from rayop.controllers.config.configuration_file import parse_configuration
from rayop.controllers.config.options import DEFAULT_OPTIONS, OperatorOptions

from ._fixtures import head_pod, load_sample, minimal_cluster, worker_pod

CONFIG = """\
apiVersion: config.ray.io/v1alpha1
kind: Configuration
headSidecarContainers:
- name: fluentbit
  image: fluent/fluent-bit:1.9.6
workerSidecarContainers:
- name: fluentbit
  image: fluent/fluent-bit:1.9.6
  stdin: false
- name: cost-agent
  image: example.com/cost:1
defaultContainerEnvs:
- name: RAY_enable_open_telemetry
  value: "true"
- name: USER_WINS
  value: default
- name: RAY_PORT
  value: "7000"
defaultPodLabels:
  team: platform
  ray.io/node-type: not-this
defaultPodAnnotations:
  prometheus.io/scrape: "true"
  user-wins: default
"""


def options() -> OperatorOptions:
    defaults = parse_configuration(CONFIG).pod_defaults()
    return dataclasses.replace(DEFAULT_OPTIONS, pod_defaults=defaults)


def user_cluster() -> dict[str, Any]:
    cluster = load_sample("ray-cluster.sample.yaml")
    for template in (
        cluster["spec"]["headGroupSpec"]["template"],
        cluster["spec"]["workerGroupSpecs"][0]["template"],
    ):
        template.setdefault("metadata", {})["annotations"] = {"user-wins": "user"}
        container = template["spec"]["containers"][0]
        container["env"] = [{"name": "USER_WINS", "value": "user"}]
    return cluster


def test_head_gets_its_sidecars_after_the_ray_container() -> None:
    pod = head_pod(user_cluster(), options=options())
    names = [c["name"] for c in pod["spec"]["containers"]]
    assert names == ["ray-head", "fluentbit"]
    assert pod["spec"]["containers"][1] == {"name": "fluentbit", "image": "fluent/fluent-bit:1.9.6"}


def test_head_sidecars_come_after_the_autoscaler() -> None:
    cluster = minimal_cluster(enableInTreeAutoscaling=True)
    pod = head_pod(cluster, options=options())
    assert [c["name"] for c in pod["spec"]["containers"]][1:] == ["autoscaler", "fluentbit"]


def test_workers_get_the_worker_sidecars_in_order_with_go_omitempty() -> None:
    cluster = user_cluster()
    pod = worker_pod(cluster, cluster["spec"]["workerGroupSpecs"][0], options=options())
    sidecars = pod["spec"]["containers"][1:]
    assert sidecars == [
        {"name": "fluentbit", "image": "fluent/fluent-bit:1.9.6"},
        {"name": "cost-agent", "image": "example.com/cost:1"},
    ]


def test_default_envs_go_on_the_ray_container_after_the_users_and_before_kuberays() -> None:
    cluster = user_cluster()
    for pod in (
        head_pod(cluster, options=options()),
        worker_pod(cluster, cluster["spec"]["workerGroupSpecs"][0], options=options()),
    ):
        ray, *sidecars = pod["spec"]["containers"]
        names = [e["name"] for e in ray["env"]]
        assert names[:3] == ["USER_WINS", "RAY_enable_open_telemetry", "RAY_PORT"]
        env = {e["name"]: e.get("value") for e in ray["env"]}
        assert env["USER_WINS"] == "user"  # the user's own value is kept
        assert env["RAY_PORT"] == "7000"  # KubeRay adds RAY_PORT only when absent
        assert names.count("RAY_PORT") == 1
        for sidecar in sidecars:
            assert "env" not in sidecar  # only the Ray container gets them


def test_default_labels_and_annotations_never_override_the_pods_own() -> None:
    cluster = user_cluster()
    for pod, node_type in (
        (head_pod(cluster, options=options()), "head"),
        (worker_pod(cluster, cluster["spec"]["workerGroupSpecs"][0], options=options()), "worker"),
    ):
        meta = pod["metadata"]
        assert meta["labels"]["team"] == "platform"
        assert meta["labels"]["ray.io/node-type"] == node_type
        assert meta["annotations"]["prometheus.io/scrape"] == "true"
        assert meta["annotations"]["user-wins"] == "user"


def test_without_a_configuration_pods_are_unchanged() -> None:
    cluster = load_sample("ray-cluster.sample.yaml")
    plain = head_pod(cluster, options=DEFAULT_OPTIONS)
    empty = parse_configuration("apiVersion: config.ray.io/v1alpha1\nkind: Configuration\n")
    same = head_pod(
        cluster, options=dataclasses.replace(DEFAULT_OPTIONS, pod_defaults=empty.pod_defaults())
    )
    assert plain == same


def test_building_twice_does_not_share_or_grow_the_defaults() -> None:
    opts = options()
    cluster = user_cluster()
    first = head_pod(cluster, options=opts)
    first["spec"]["containers"][1]["image"] = "changed"
    second = head_pod(cluster, options=opts)
    assert second["spec"]["containers"][1]["image"] == "fluent/fluent-bit:1.9.6"
    assert len(opts.pod_defaults.head_sidecars) == 1
