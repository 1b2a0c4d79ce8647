"""Head and worker pods compared field by field with what KubeRay v1.7 creates."""

from __future__ import annotations

import dataclasses

import pytest

from rayop.controllers.config.options import DEFAULT_OPTIONS, OperatorOptions
from rayop.controllers.raycluster.services import build_head_service
from tests.kuberay_compat import names_or_skip, samples_dir

from ._fixtures import env_of, head_pod, load_sample, minimal_cluster, worker_pod

OWNER = {
    "apiVersion": "ray.io/v1",
    "kind": "RayCluster",
    "name": "raycluster-kuberay",
    "uid": "uid-1",
    "controller": True,
    "blockOwnerDeletion": True,
}
FQDN = "raycluster-kuberay-head-svc.default.svc.cluster.local"


def test_sample_head_pod_metadata() -> None:
    pod = head_pod(load_sample("ray-cluster.sample.yaml"), options=DEFAULT_OPTIONS)
    meta = pod["metadata"]
    assert pod["apiVersion"] == "v1" and pod["kind"] == "Pod"
    assert meta["generateName"] == "raycluster-kuberay-head-"
    assert "name" not in meta
    assert meta["namespace"] == "default"
    assert meta["labels"] == {
        "ray.io/is-ray-node": "yes",
        "ray.io/cluster": "raycluster-kuberay",
        "ray.io/node-type": "head",
        "ray.io/group": "headgroup",
        "ray.io/identifier": "raycluster-kuberay-head",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    assert meta["ownerReferences"] == [OWNER]
    assert meta["annotations"]["ray.io/ft-enabled"] == "false"
    assert meta["annotations"]["ray.io/kuberay-version"] == "v1.7.0"
    assert len(meta["annotations"]["ray.io/upgrade-strategy-recreate-hash"]) == 32


def test_sample_head_container_command_env_ports_volumes() -> None:
    pod = head_pod(load_sample("ray-cluster.sample.yaml"), options=DEFAULT_OPTIONS)
    ray = pod["spec"]["containers"][0]
    start = (
        "ray start --head  --block  --dashboard-agent-listen-port=52365  --dashboard-host=0.0.0.0 "
        " --memory=5368709120  --metrics-export-port=8080  --num-cpus=1 "
    )
    assert ray["command"] == ["/bin/bash", "-c", "--"]
    assert ray["args"] == ["ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; " + start]
    assert [e["name"] for e in ray["env"]] == [
        "RAY_CLUSTER_NAME",
        "RAY_CLUSTER_NAMESPACE",
        "RAY_CLOUD_INSTANCE_ID",
        "RAY_NODE_TYPE_NAME",
        "KUBERAY_GEN_RAY_START_CMD",
        "RAY_PORT",
        "RAY_ADDRESS",
        "RAY_USAGE_STATS_KUBERAY_IN_USE",
        "RAY_USAGE_STATS_EXTRA_TAGS",
        "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE",
    ]
    env = env_of(ray)
    assert env["KUBERAY_GEN_RAY_START_CMD"] == start
    assert env["RAY_ADDRESS"] == "127.0.0.1:6379"
    assert env["RAY_CLUSTER_NAME"] == {
        "fieldRef": {"fieldPath": "metadata.labels['ray.io/cluster']"}
    }
    assert env["RAY_USAGE_STATS_EXTRA_TAGS"] == "kuberay_version=v1.7.0;kuberay_crd=RayCluster"
    assert {"name": "metrics", "containerPort": 8080} in ray["ports"]
    assert ray["volumeMounts"] == [{"name": "shared-mem", "mountPath": "/dev/shm"}]
    assert pod["spec"]["volumes"] == [
        {"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "5Gi"}}
    ]


def test_sample_head_probes_exec_wget_for_ray_before_2_53() -> None:
    ray = head_pod(load_sample("ray-cluster.sample.yaml"), options=DEFAULT_OPTIONS)["spec"][
        "containers"
    ][0]
    check = (
        "wget --tries 1 -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success"
        " && wget --tries 1 -T 10 -q -O- http://localhost:8265/api/gcs_healthz | grep success"
    )
    assert ray["livenessProbe"] == {
        "exec": {"command": ["bash", "-c", check]},
        "initialDelaySeconds": 30,
        "timeoutSeconds": 5,
        "periodSeconds": 5,
        "successThreshold": 1,
        "failureThreshold": 120,
    }
    assert ray["readinessProbe"]["initialDelaySeconds"] == 10
    assert ray["readinessProbe"]["failureThreshold"] == 10


def test_http_probes_from_ray_2_53_and_user_probes_kept() -> None:
    cluster = minimal_cluster(rayVersion="2.53.0")
    worker = cluster["spec"]["workerGroupSpecs"][0]
    user_probe = {"tcpSocket": {"port": 1}}
    worker["template"]["spec"]["containers"][0]["readinessProbe"] = user_probe
    ray = worker_pod(cluster, worker, options=DEFAULT_OPTIONS)["spec"]["containers"][0]
    assert ray["livenessProbe"]["httpGet"] == {"path": "/api/healthz", "port": 52365}
    assert ray["livenessProbe"]["timeoutSeconds"] == 2
    assert ray["readinessProbe"] == user_probe
    no_probes = dataclasses.replace(DEFAULT_OPTIONS, enable_probes_injection=False)
    ray = worker_pod(cluster, worker, options=no_probes)["spec"]["containers"][0]
    assert "livenessProbe" not in ray


def test_sample_worker_pod() -> None:
    cluster = load_sample("ray-cluster.sample.yaml")
    pod = worker_pod(cluster, cluster["spec"]["workerGroupSpecs"][0], options=DEFAULT_OPTIONS)
    meta = pod["metadata"]
    assert meta["generateName"] == "raycluster-kuberay-workergroup-worker-"
    assert meta["labels"]["ray.io/node-type"] == "worker"
    assert meta["labels"]["ray.io/group"] == "workergroup"
    assert meta["labels"]["ray.io/identifier"] == "raycluster-kuberay-worker"
    assert meta["labels"]["ray.io/worker-group-replica-index"] == "0"
    assert "ray.io/worker-group-replica-name" not in meta["labels"]
    assert "annotations" not in meta
    ray = pod["spec"]["containers"][0]
    assert ray["args"] == [
        "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; ray start "
        f" --address={FQDN}:6379  --block  --dashboard-agent-listen-port=52365 "
        " --memory=1073741824  --metrics-export-port=8080  --num-cpus=1 "
    ]
    env = env_of(ray)
    assert [e["name"] for e in ray["env"]][:2] == ["FQ_RAY_IP", "RAY_IP"]
    assert env["FQ_RAY_IP"] == FQDN and env["RAY_IP"] == "raycluster-kuberay-head-svc"
    assert env["RAY_ADDRESS"] == f"{FQDN}:6379"
    assert "RAY_USAGE_STATS_EXTRA_TAGS" not in env
    assert ray["livenessProbe"]["timeoutSeconds"] == 2


def test_worker_wait_gcs_ready_init_container() -> None:
    cluster = load_sample("ray-cluster.sample.yaml")
    group = cluster["spec"]["workerGroupSpecs"][0]
    init = worker_pod(cluster, group, options=DEFAULT_OPTIONS)["spec"]["initContainers"]
    assert [c["name"] for c in init] == ["wait-gcs-ready"]
    wait = init[0]
    assert wait["image"] == "rayproject/ray:2.52.0"
    assert wait["command"] == ["/bin/bash", "-c", "--"]
    assert f"ray health-check --address {FQDN}:6379 > /dev/null 2>&1" in wait["args"][0]
    assert wait["args"][0].startswith("\n\t\t\t\t\tSECONDS=0\n") and wait["args"][0].endswith(
        "done\n\t\t\t\t"
    )
    limits = {"cpu": "200m", "memory": "256Mi"}
    assert wait["resources"] == {"limits": limits, "requests": limits}
    assert env_of(wait) == {"FQ_RAY_IP": FQDN, "RAY_IP": "raycluster-kuberay-head-svc"}
    off = dataclasses.replace(DEFAULT_OPTIONS, enable_init_container_injection=False)
    assert "initContainers" not in worker_pod(cluster, group, options=off)["spec"]


def test_options_deterministic_head_name_login_shell_and_domain() -> None:
    options = OperatorOptions.from_env(
        {
            "ENABLE_DETERMINISTIC_HEAD_POD_NAME": "TRUE",
            "ENABLE_LOGIN_SHELL": "true",
            "CLUSTER_DOMAIN": "corp.example",
        }
    )
    cluster = minimal_cluster()
    head = head_pod(cluster, options=options)
    assert head["metadata"]["name"] == "rc-head" and "generateName" not in head["metadata"]
    assert head["spec"]["containers"][0]["command"] == ["/bin/bash", "-cl", "--"]
    worker = worker_pod(cluster, cluster["spec"]["workerGroupSpecs"][0], options=options)
    assert env_of(worker["spec"]["containers"][0])["FQ_RAY_IP"] == "rc-head-svc.ns.svc.corp.example"


def test_long_names_are_cut_to_50_characters() -> None:
    cluster = minimal_cluster()
    cluster["metadata"]["name"] = "c" * 53
    group = cluster["spec"]["workerGroupSpecs"][0]
    group["groupName"] = "g" * 20
    worker = worker_pod(cluster, group, options=DEFAULT_OPTIONS)
    assert worker["metadata"]["generateName"] == "c" * 50 + "-worker-"
    assert head_pod(cluster, options=DEFAULT_OPTIONS)["metadata"]["generateName"] == (
        "c" * 50 + "-head-"
    )
    assert worker["metadata"]["labels"]["ray.io/identifier"] == "c" * 53 + "-worker"


def test_user_labels_cannot_override_protected_labels() -> None:
    cluster = minimal_cluster()
    group = cluster["spec"]["workerGroupSpecs"][0]
    group["template"]["metadata"] = {
        "labels": {"ray.io/group": "x", "team": "a", "ray.io/is-ray-node": "no"}
    }
    group["labels"] = {"team": "b"}
    pod = worker_pod(cluster, group, options=DEFAULT_OPTIONS)
    assert pod["metadata"]["labels"]["ray.io/group"] == "g"
    assert pod["metadata"]["labels"]["team"] == "b"
    assert pod["metadata"]["labels"]["ray.io/is-ray-node"] == "no"
    assert "--labels=team=b" in pod["spec"]["containers"][0]["args"][0]


def test_multi_host_worker_labels_and_tpu_resources() -> None:
    cluster = load_sample("ray-cluster.tpu-v4-multihost.yaml")
    group = cluster["spec"]["workerGroupSpecs"][0]
    pod = worker_pod(
        cluster,
        group,
        options=DEFAULT_OPTIONS,
        replica_index=3,
        replica_name="tpu-group-abcde",
        host_index=1,
    )
    assert pod["metadata"]["labels"]["ray.io/worker-group-replica-index"] == "3"
    assert pod["metadata"]["labels"]["ray.io/worker-group-replica-name"] == "tpu-group-abcde"
    assert pod["metadata"]["labels"]["ray.io/replica-host-index"] == "1"
    args = pod["spec"]["containers"][0]["args"][0]
    assert " --resources='{\"TPU\":4}' " in args
    assert " --memory=40000000000 " in args and " --num-cpus=1 " in args
    assert pod["spec"]["volumes"][0]["emptyDir"] == {"medium": "Memory", "sizeLimit": "40G"}


def test_gpu_limits_become_num_gpus() -> None:
    cluster = minimal_cluster()
    group = cluster["spec"]["workerGroupSpecs"][0]
    group["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"cpu": "500m", "nvidia.com/gpu": "2"},
        "requests": {"memory": "2Gi"},
    }
    pod = worker_pod(cluster, group, options=DEFAULT_OPTIONS)
    args = pod["spec"]["containers"][0]["args"][0]
    assert " --num-gpus=2 " in args and " --num-cpus=1 " in args
    assert "--memory" not in args  # memory comes from the limit only
    assert pod["spec"]["volumes"][0]["emptyDir"]["sizeLimit"] == "2Gi"


def test_user_command_runs_before_ray_start_and_overwrite_annotation() -> None:
    cluster = minimal_cluster()
    head = cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["command"] = ["echo", "hi"]
    ray = head_pod(cluster, options=DEFAULT_OPTIONS)["spec"]["containers"][0]
    assert ray["args"][0].startswith(" echo  hi  && ulimit -n ")
    cluster["metadata"]["annotations"] = {"ray.io/overwrite-container-cmd": "true"}
    pod = head_pod(cluster, options=DEFAULT_OPTIONS)
    assert pod["spec"]["containers"][0]["command"] == ["echo", "hi"]
    assert "args" not in pod["spec"]["containers"][0]
    assert pod["metadata"]["annotations"]["ray.io/overwrite-container-cmd"] == "true"


def test_autoscaler_sidecar_and_shared_log_volume() -> None:
    cluster = load_sample("ray-cluster.autoscaler-v2.yaml")
    pod = head_pod(cluster, options=DEFAULT_OPTIONS)
    containers = pod["spec"]["containers"]
    assert [c["name"] for c in containers][-1] == "autoscaler"
    sidecar = containers[-1]
    assert sidecar["image"] == containers[0]["image"]
    assert sidecar["args"] == [
        "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)"
    ]
    assert {"name": "ray-logs", "mountPath": "/tmp/ray"} in sidecar["volumeMounts"]
    assert {"name": "ray-logs", "emptyDir": {}} in pod["spec"]["volumes"]
    assert pod["spec"]["restartPolicy"] == "Never"
    assert pod["spec"]["serviceAccountName"] == cluster["metadata"]["name"]
    ray = containers[0]
    assert env_of(ray)["RAY_enable_autoscaler_v2"] == "true"
    assert " --no-monitor " in ray["args"][0]
    group = cluster["spec"]["workerGroupSpecs"][0]
    assert worker_pod(cluster, group, options=DEFAULT_OPTIONS)["spec"]["restartPolicy"] == "Never"


def test_redis_gcs_ft_head_env_and_annotations() -> None:
    cluster = load_sample("ray-cluster.external-redis.yaml")
    head = head_pod(cluster, options=DEFAULT_OPTIONS)
    assert head["metadata"]["annotations"]["ray.io/ft-enabled"] == "true"
    assert head["metadata"]["annotations"]["ray.io/external-storage-namespace"] == "uid-1"
    env = env_of(head["spec"]["containers"][0])
    assert env["RAY_external_storage_namespace"] == "uid-1"
    assert "RAY_REDIS_ADDRESS" in env and "REDIS_PASSWORD" in env
    assert " --redis-password=$REDIS_PASSWORD " in head["spec"]["containers"][0]["args"][0]
    worker = worker_pod(cluster, cluster["spec"]["workerGroupSpecs"][0], options=DEFAULT_OPTIONS)
    assert (
        env_of(worker["spec"]["containers"][0])["RAY_gcs_rpc_server_reconnect_timeout_s"] == "600"
    )


def test_token_auth_env_on_ray_and_init_containers() -> None:
    cluster = load_sample("ray-cluster.auth.yaml")
    group = cluster["spec"]["workerGroupSpecs"][0]
    worker = worker_pod(cluster, group, options=DEFAULT_OPTIONS)
    for container in (worker["spec"]["containers"][0], worker["spec"]["initContainers"][0]):
        env = env_of(container)
        assert env["RAY_AUTH_MODE"] == "token"
        assert env["RAY_AUTH_TOKEN"] == {
            "secretKeyRef": {"name": cluster["metadata"]["name"], "key": "auth_token"}
        }


def test_rayservice_created_cluster_labels_env_and_serve_readiness() -> None:
    cluster = minimal_cluster()
    cluster["metadata"]["labels"] = {"ray.io/originated-from-crd": "RayService"}
    head = head_pod(cluster, options=DEFAULT_OPTIONS)
    assert head["metadata"]["labels"]["ray.io/serve"] == "false"
    assert (
        "kuberay_crd=RayService"
        in env_of(head["spec"]["containers"][0])["RAY_USAGE_STATS_EXTRA_TAGS"]
    )
    worker = worker_pod(cluster, cluster["spec"]["workerGroupSpecs"][0], options=DEFAULT_OPTIONS)
    assert worker["metadata"]["labels"]["ray.io/serve"] == "true"
    ray = worker["spec"]["containers"][0]
    assert env_of(ray)["RAY_SERVE_KV_TIMEOUT_S"] == "5"
    readiness = ray["readinessProbe"]
    assert readiness["failureThreshold"] == 1
    assert "http://localhost:8000/-/healthz" in readiness["exec"]["command"][2]


def test_builders_do_not_mutate_the_cluster() -> None:
    cluster = load_sample("ray-cluster.autoscaler-v2.yaml")
    before = repr(cluster)
    head_pod(cluster, options=DEFAULT_OPTIONS)
    worker_pod(cluster, cluster["spec"]["workerGroupSpecs"][0], options=DEFAULT_OPTIONS)
    assert repr(cluster) == before


def _cluster_samples() -> list[str]:
    return sorted(
        p.name
        for p in samples_dir().glob("ray-cluster*.yaml")
        if "kind: RayCluster" in p.read_text()
    )


@pytest.mark.parametrize("sample", names_or_skip(_cluster_samples))
def test_every_cluster_sample_builds(sample: str) -> None:
    cluster = load_sample(sample)
    head = head_pod(cluster, options=DEFAULT_OPTIONS)
    assert head["spec"]["containers"][0]["env"]
    for group in cluster["spec"].get("workerGroupSpecs") or []:
        pod = worker_pod(cluster, group, options=DEFAULT_OPTIONS)
        assert pod["metadata"]["labels"]["ray.io/group"] == group["groupName"]
    assert build_head_service(cluster, options=DEFAULT_OPTIONS)["spec"]["ports"]
