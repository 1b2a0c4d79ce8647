"""The ray start command and names."""

from __future__ import annotations

import random

from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.kit import names
from rayop.controllers.raycluster.command import ray_start_command, ray_start_params, render_params

from ._fixtures import group_model, minimal_cluster, parse


def test_render_params_booleans_and_sorting() -> None:
    params = {"b": "True", "a": "false", "log-color": "false", "num-cpus": "2"}
    assert render_params(params) == " --b  --log-color=false  --num-cpus=2 "


def test_worker_address_uses_head_port_and_explicit_params_win() -> None:
    cluster = minimal_cluster()
    cluster["spec"]["headGroupSpec"]["rayStartParams"] = {"port": "6380"}
    group = cluster["spec"]["workerGroupSpecs"][0]
    group["rayStartParams"] = {"num-cpus": "7", "metrics-export-port": "9000", "block": "false"}
    params = ray_start_params(
        parse(cluster), group_model(group), node_type="worker", fqdn="h.ns.svc.cluster.local"
    )
    assert params["address"] == "h.ns.svc.cluster.local:6380"
    assert params["block"] == "true" and params["metrics-export-port"] == "9000"
    container = {"resources": {"limits": {"cpu": "3"}}}
    cmd = ray_start_command("worker", params, container)
    assert cmd.startswith("ray start  --address=h.ns.svc.cluster.local:6380 ")
    assert " --num-cpus=7 " in cmd


def test_group_resources_override_container_resources() -> None:
    cluster = minimal_cluster()
    group = cluster["spec"]["workerGroupSpecs"][0]
    group["resources"] = {"CPU": "4", "memory": "1Gi", "nvidia.com/gpu": "1", "Custom": "500m"}
    params = ray_start_params(parse(cluster), group_model(group), node_type="worker", fqdn="f")
    cmd = ray_start_command(
        "worker", params, {"resources": {"limits": {"cpu": "1", "google.com/tpu": "4"}}}
    )
    assert " --num-cpus=4 " in cmd and " --memory=1073741824 " in cmd and " --num-gpus=1 " in cmd
    assert ' --resources=\'{"Custom":0.5,"TPU":4}\' ' in cmd


def test_shell_escaped_resources_param_keeps_user_resources() -> None:
    """Samples write resources as '"{\\"TPU\\": 4}"' (ray-job.tpu-v6e-256-multihost.yaml)."""
    cluster = minimal_cluster()
    group = cluster["spec"]["workerGroupSpecs"][0]
    group["rayStartParams"] = {"resources": '"{\\"TPU\\": 4}"'}
    params = ray_start_params(parse(cluster), group_model(group), node_type="worker", fqdn="f")
    cmd = ray_start_command("worker", params, {"resources": {"limits": {"google.com/tpu": "4"}}})
    assert "TPU" in cmd


def test_name_rules() -> None:
    assert names.check_name("1" + "a" * 60) == "a" * 50
    assert names.check_name("9abc") == "rabc"
    assert names.check_label("-x") == "rx"
    assert names.pod_name("X" * 60, "worker", generate=True) == "x" * 50 + "-worker-"
    assert names.replica_group_name("g", random.Random(1)).startswith("g-")
    assert len(names.replica_group_name("g", random.Random(1))) == 7


def test_options_from_env_defaults_and_parsing() -> None:
    defaults = OperatorOptions.from_env({})
    assert defaults.enable_init_container_injection and defaults.enable_probes_injection
    assert not defaults.enable_ray_head_cluster_ip_service
    assert defaults.cluster_domain == "cluster.local" and defaults.default_requeue_seconds == 300
    custom = OperatorOptions.from_env(
        {
            "ENABLE_PROBES_INJECTION": "FALSE",
            "RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV": "10",
            "ENABLE_GCS_FT_REDIS_CLEANUP": "no",
            "ENABLE_RANDOM_POD_DELETE": "true",
        }
    )
    assert not custom.enable_probes_injection and custom.default_requeue_seconds == 10
    assert custom.enable_gcs_ft_redis_cleanup and custom.enable_random_pod_delete
    assert (
        OperatorOptions.from_env(
            {"RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV": "x"}
        ).default_requeue_seconds
        == 300
    )
