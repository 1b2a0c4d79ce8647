"""Accelerator nodes on the embedded plane: presets, Node manifests, ExtendedResourceToleration,
and the ``--node-pool``/``--node-file`` flags of ``rayop apiserver`` and ``rayop up``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rayop.sim.admission.extended_resource_toleration import (
    add_extended_resource_tolerations,
    is_extended_resource,
)
from rayop.sim.controlplane import EmbeddedControlPlane
from rayop.sim.nodes.kubelet import KubeletConfig
from rayop.sim.nodes.node_manifests import NodeManifestError, load_node_manifests
from rayop.sim.nodes.node_presets import PRESETS, NodePresetError, preset_pools
from rayop.sim.nodes.node_specs import DEFAULT_NODE_CAPACITY
from rayop.testing import eventually

from .apiserver_process import kubectl_env, running_apiserver

Obj = dict[str, Any]
KUBECTL = "/usr/bin/kubectl"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}

NODES_YAML = """\
apiVersion: v1
kind: Node
metadata:
  name: a100-0
  labels:
    cloud.google.com/gke-accelerator: nvidia-tesla-a100
  annotations:
    node.alpha.kubernetes.io/ttl: "0"
spec:
  taints:
  - {key: nvidia.com/gpu, value: present, effect: NoSchedule}
status:
  capacity: {cpu: "12", memory: 85Gi, pods: "110", nvidia.com/gpu: "1"}
  allocatable: {cpu: 11500m, memory: 80Gi, pods: "110", nvidia.com/gpu: "1"}
---
kind: List
items:
- kind: Node
  metadata: {name: plain-0}
"""


# -- presets -------------------------------------------------------------------------------------


def test_a_v6e_16_preset_is_one_pool_of_four_tainted_hosts_per_slice() -> None:
    pools = preset_pools("tpu-v6e-16:2")
    assert [p.node_names() for p in pools] == [
        [f"tpu-v6e-16-{s}-{h}" for h in range(4)] for s in range(2)
    ]
    pool = pools[0]
    assert pool.labels["cloud.google.com/gke-tpu-accelerator"] == "tpu-v6e-slice"
    assert pool.labels["cloud.google.com/gke-tpu-topology"] == "4x4"
    assert pool.labels["cloud.google.com/gke-nodepool"] == "tpu-v6e-16-0"
    assert pool.labels["node.kubernetes.io/instance-type"] == "ct6e-standard-4t"
    assert pool.capacity["google.com/tpu"] == "4"
    assert pool.taints == ({"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"},)
    assert preset_pools("tpu-v6e-4x4")[0].labels == {
        **pool.labels,
        "cloud.google.com/gke-nodepool": "tpu-v6e-4x4-0",
    }


@pytest.mark.parametrize(
    ("preset", "hosts", "chips"),
    [("tpu-v4-2x2x1", 1, 4), ("tpu-v4-2x2x2", 2, 4), ("tpu-v6e-2x2", 1, 4), ("tpu-v6e-4x4", 4, 4)],
)
def test_tpu_presets_split_the_topology_into_hosts_of_four_chips(
    preset: str, hosts: int, chips: int
) -> None:
    assert PRESETS[preset].hosts == hosts and PRESETS[preset].per_host == chips


def test_a_gpu_preset_gives_count_nodes_in_one_pool() -> None:
    (pool,) = preset_pools("nvidia-l4:3")
    assert pool.node_names() == ["nvidia-l4-0", "nvidia-l4-1", "nvidia-l4-2"]
    assert pool.labels["cloud.google.com/gke-accelerator"] == "nvidia-l4"
    assert pool.capacity["nvidia.com/gpu"] == "4" and pool.capacity["cpu"] == "48"
    assert pool.taints == ({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},)


@pytest.mark.parametrize(
    ("value", "says"),
    [("tpu-v9", "'tpu-v9' is unknown"), ("nvidia-l4:0", "COUNT"), ("nvidia-l4:two", "COUNT")],
)
def test_a_bad_preset_is_refused(value: str, says: str) -> None:
    with pytest.raises(NodePresetError, match=says):
        preset_pools(value)


# -- Node manifests ------------------------------------------------------------------------------


def test_node_manifests_give_labels_taints_capacity_and_allocatable(tmp_path: Path) -> None:
    path = tmp_path / "nodes.yaml"
    path.write_text(NODES_YAML)
    a100, plain = load_node_manifests(path)
    assert a100.name == "a100-0" and a100.annotations == {"node.alpha.kubernetes.io/ttl": "0"}
    assert a100.capacity["cpu"] == "12" and a100.allocatable_resources()["cpu"] == "11500m"
    assert a100.taints == ({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},)
    assert plain.name == "plain-0" and plain.allocatable_resources() == DEFAULT_NODE_CAPACITY


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("kind: Pod\nmetadata: {name: x}\n", "document 1: not a Node"),
        ("kind: Node\nmetadata: {}\n", "metadata.name is missing"),
        ("kind: Node\nmetadata: {name: Bad_Name}\n", "RFC 1123"),
        ("kind: Node\nmetadata: {name: x, labels: {'a b': c}}\n", "metadata.labels"),
        ("kind: Node\nmetadata: {name: x}\nstatus: {allocatable: {cpu: lots}}\n", "quantity"),
        ("kind: Node\nmetadata: {name: x}\nspec: {taints: [{key: k, effect: Never}]}\n", "effect"),
        ("kind: Node\nmetadata: {name: x}\n---\nkind: Node\n", "document 2"),
        ("kind: [\n", "not YAML"),
        ("", "holds no Node"),
    ],
)
def test_a_bad_node_file_is_refused_naming_it(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "nodes.yaml"
    path.write_text(text)
    with pytest.raises(NodeManifestError, match=says) as raised:
        load_node_manifests(path)
    assert str(raised.value).startswith(f"{path}: ") and "\n" not in str(raised.value)


def test_a_missing_node_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NodeManifestError, match="cannot read it"):
        load_node_manifests(tmp_path / "absent.yaml")


# -- ExtendedResourceToleration ------------------------------------------------------------------


def test_extended_resources_are_the_domain_qualified_names_outside_kubernetes_io() -> None:
    assert is_extended_resource("nvidia.com/gpu") and is_extended_resource("google.com/tpu")
    for name in ("cpu", "memory", "hugepages-2Mi", "kubernetes.io/foo", "requests.nvidia.com/gpu"):
        assert not is_extended_resource(name)


def test_a_pod_requesting_an_extended_resource_tolerates_its_taint() -> None:
    pod: Obj = {
        "spec": {
            "containers": [{"resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "1"}}}],
            "initContainers": [{"resources": {"requests": {"example.com/fpga": "1"}}}],
            "tolerations": [{"key": "ray.io/node-type", "operator": "Equal", "value": "worker"}],
        }
    }
    add_extended_resource_tolerations(pod)
    assert pod["spec"]["tolerations"] == [
        {"key": "ray.io/node-type", "operator": "Equal", "value": "worker"},
        {"key": "example.com/fpga", "operator": "Exists", "effect": "NoSchedule"},
        GPU_TOLERATION,
    ]
    add_extended_resource_tolerations(pod)  # covered already: nothing added twice
    assert len(pod["spec"]["tolerations"]) == 3
    plain: Obj = {"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}}
    add_extended_resource_tolerations(plain)
    assert "tolerations" not in plain["spec"]


@pytest.mark.parametrize("enabled", [True, False])
async def test_the_plane_adds_the_tolerations_only_when_enabled(enabled: bool) -> None:
    kubelet = KubeletConfig(
        running_delay=0.01, ready_delay=0.01, node_pools=preset_pools("nvidia-tesla-t4")
    )
    async with EmbeddedControlPlane(kubelet=kubelet, extended_resource_toleration=enabled) as cp:
        pods = cp.store.resources.get("", "v1", "pods")
        assert pods is not None
        container = {"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": "4"}}}
        spec = {
            "containers": [container],
            "nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-tesla-t4"},
        }
        await cp.store.create(pods, "default", {"metadata": {"name": "p"}, "spec": spec})

        def pod() -> Obj:
            found = cp.store.peek(pods, "default", "p")
            assert found is not None
            return dict(found)

        if enabled:
            assert pod()["spec"]["tolerations"] == [GPU_TOLERATION]
            await eventually(lambda: pod()["status"].get("phase") == "Running")
            assert pod()["spec"]["nodeName"] == "nvidia-tesla-t4-0"
            return
        assert "tolerations" not in pod()["spec"]

        def refused() -> str:
            conditions = pod()["status"].get("conditions") or []
            return next((c["message"] for c in conditions if c["type"] == "PodScheduled"), "")

        await eventually(lambda: bool(refused()))
        assert refused() == (
            "0/4 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}, "
            "3 node(s) didn't match Pod's node affinity/selector. preemption: 0/4 nodes are "
            "available: 4 Preemption is not helpful for scheduling."
        )


# -- the flags -----------------------------------------------------------------------------------


def test_rayop_apiserver_adds_the_node_pools_and_files(tmp_path: Path) -> None:
    path = tmp_path / "nodes.yaml"
    path.write_text(NODES_YAML)
    args = ("--nodes", "1", "--node-pool", "tpu-v4-2x2x2", "--node-file", str(path))
    with running_apiserver(tmp_path, *args) as kubeconfig:
        env = kubectl_env(kubeconfig, tmp_path)
        out = subprocess.run(
            [KUBECTL, "get", "nodes", "-o", "json"],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    nodes = {n["metadata"]["name"]: n for n in json.loads(out)["items"]}
    assert sorted(nodes) == [
        "a100-0",
        "plain-0",
        "sim-node-0",
        "tpu-v4-2x2x2-0-0",
        "tpu-v4-2x2x2-0-1",
    ]
    host = nodes["tpu-v4-2x2x2-0-1"]
    assert host["metadata"]["labels"]["cloud.google.com/gke-tpu-topology"] == "2x2x2"
    assert host["status"]["allocatable"]["google.com/tpu"] == "4"
    a100 = nodes["a100-0"]
    assert a100["status"]["allocatable"]["cpu"] == "11500m"
    assert a100["status"]["capacity"]["cpu"] == "12"
    assert a100["spec"]["taints"][0]["key"] == "nvidia.com/gpu"


@pytest.mark.parametrize("command", ["apiserver", "up"])
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--node-pool", "tpu-v9"), "node pool preset 'tpu-v9' is unknown"),
        (("--node-file", "/nonexistent/nodes.yaml"), "/nonexistent/nodes.yaml: cannot read it"),
        (("--node-pool", "nvidia-l4", "--node-pool", "nvidia-l4"), "nvidia-l4-0 is defined twice"),
    ],
)
def test_a_bad_pool_ends_the_command_with_one_line(
    command: str, args: tuple[str, ...], says: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rayop", command, *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("rayop: ")]
    assert len(errors) == 1 and says in errors[0], done.stderr
