"""The simulated scheduler's filters (claims, node selectors, taints, resources) and volumes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from rayop.apimachinery.pod_requests import pod_requests
from rayop.sim.controlplane import EmbeddedControlPlane
from rayop.sim.nodes.kubelet import KubeletConfig
from rayop.sim.nodes.scheduler import DEFAULT_NODE_CAPACITY, NodePool
from rayop.sim.storage.store import Store
from rayop.testing import FAST_KUBELET, eventually

from .apiserver_process import kubectl_env, running_apiserver

Obj = dict[str, Any]
NS = "default"
KUBECTL = "/usr/bin/kubectl"


def _pod(name: str, **spec: Any) -> Obj:
    body: Obj = {"containers": [{"name": "c", "image": "busybox"}], **spec}
    return {"metadata": {"name": name}, "spec": body}


def _claim(name: str, **spec: Any) -> Obj:
    body: Obj = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}},
        **spec,
    }
    return {"metadata": {"name": name}, "spec": body}


def _mounting(claim: str) -> Obj:
    return {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}


class Plane:
    """The embedded plane's store, with helpers to create and read objects."""

    def __init__(self, cp: EmbeddedControlPlane) -> None:
        self.cp = cp
        self.store: Store = cp.store

    def info(self, plural: str, group: str = "") -> Any:
        found = self.store.resources.get(group, "v1", plural)
        assert found is not None, plural
        return found

    async def create(self, plural: str, obj: Obj, namespace: str = NS, group: str = "") -> Obj:
        created: Obj = await self.store.create(self.info(plural, group), namespace, obj)
        return created

    def get(self, plural: str, name: str, namespace: str = NS, group: str = "") -> Obj | None:
        return self.store.peek(self.info(plural, group), namespace, name)

    def pod_running(self, name: str) -> bool:
        pod = self.get("pods", name)
        return pod is not None and (pod.get("status") or {}).get("phase") == "Running"

    def scheduled_message(self, name: str) -> str:
        pod = self.get("pods", name) or {}
        for cond in (pod.get("status") or {}).get("conditions") or []:
            if cond["type"] == "PodScheduled" and cond["status"] == "False":
                return str(cond.get("message") or "")
        return ""

    def events(self, name: str) -> list[Obj]:
        return [
            e
            for e in self.store.list(self.info("events"), NS)[0]
            if e["involvedObject"]["name"] == name and e["reason"] == "FailedScheduling"
        ]

    async def unschedulable(self, name: str, message: str) -> None:
        async def reported() -> bool:
            return self.scheduled_message(name) == message and any(
                e["message"] == message for e in self.events(name)
            )

        await eventually(reported, timeout=10, what=f"{name}: {message}")
        pod = self.get("pods", name)
        assert pod is not None and not pod["spec"].get("nodeName")
        event = self.events(name)[-1]
        assert event["type"] == "Warning" and event["reportingComponent"] == "default-scheduler"
        assert event["action"] == "Scheduling"


@pytest.fixture
async def plane(request: pytest.FixtureRequest) -> AsyncIterator[Plane]:
    kubelet = getattr(request, "param", FAST_KUBELET)
    async with EmbeddedControlPlane(kubelet=kubelet) as cp:
        yield Plane(cp)


async def test_a_missing_claim_keeps_the_pod_pending_until_it_is_created_and_bound(
    plane: Plane,
) -> None:
    await plane.create("pods", _pod("p", **_mounting("data")))
    await plane.unschedulable(
        "p",
        '0/3 nodes are available: persistentvolumeclaim "data" not found. not found',
    )
    claim = await plane.create("persistentvolumeclaims", _claim("data"))
    await eventually(lambda: plane.pod_running("p"), timeout=10, what="the pod runs")
    pod = plane.get("pods", "p")
    bound = plane.get("persistentvolumeclaims", "data")
    assert pod is not None and bound is not None
    assert bound["spec"]["storageClassName"] == "standard"
    assert bound["status"]["phase"] == "Bound"
    assert bound["spec"]["volumeName"] == f"pvc-{claim['metadata']['uid']}"
    annotations = bound["metadata"]["annotations"]
    assert annotations["volume.kubernetes.io/selected-node"] == pod["spec"]["nodeName"]
    assert annotations["pv.kubernetes.io/bind-completed"] == "yes"
    volume = plane.get("persistentvolumes", bound["spec"]["volumeName"], "")
    assert volume is not None and volume["status"]["phase"] == "Bound"
    assert volume["spec"]["claimRef"]["name"] == "data"
    assert volume["spec"]["capacity"] == {"storage": "1Gi"}
    term = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]
    assert term["matchExpressions"][0]["values"] == [pod["spec"]["nodeName"]]

    await plane.store.delete(plane.info("persistentvolumeclaims"), NS, "data")

    async def volume_gone() -> bool:
        return plane.get("persistentvolumes", bound["spec"]["volumeName"], "") is None

    await eventually(volume_gone, timeout=10, what="the provisioned volume is deleted")


async def test_the_default_storage_class_is_kinds_standard(plane: Plane) -> None:
    async def created() -> bool:
        return plane.get("storageclasses", "standard", "", "storage.k8s.io") is not None

    await eventually(created, timeout=5)
    sc = plane.get("storageclasses", "standard", "", "storage.k8s.io")
    assert sc is not None
    assert sc["metadata"]["annotations"] == {"storageclass.kubernetes.io/is-default-class": "true"}
    assert sc["provisioner"] == "rancher.io/local-path"
    assert sc["volumeBindingMode"] == "WaitForFirstConsumer" and sc["reclaimPolicy"] == "Delete"


async def test_an_unbound_immediate_claim_waits_for_a_matching_volume(plane: Plane) -> None:
    await plane.create("persistentvolumeclaims", _claim("static", storageClassName=""))
    await plane.create("pods", _pod("s", **_mounting("static")))
    await plane.unschedulable(
        "s",
        "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found",
    )
    small: Obj = {
        "metadata": {"name": "small"},
        "spec": {
            "capacity": {"storage": "100Mi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "",
            "hostPath": {"path": "/tmp/small"},
        },
    }
    await plane.create("persistentvolumes", small, "")
    big = {
        **small,
        "metadata": {"name": "big"},
        "spec": {**small["spec"], "capacity": {"storage": "5Gi"}},
    }
    await plane.create("persistentvolumes", big, "")
    await eventually(lambda: plane.pod_running("s"), timeout=10, what="the pod runs")
    claim = plane.get("persistentvolumeclaims", "static")
    assert claim is not None and claim["spec"]["volumeName"] == "big"
    unused = plane.get("persistentvolumes", "small", "")
    assert unused is not None and not unused["spec"].get("claimRef")


async def test_a_node_selector_no_node_matches_waits_for_a_label(plane: Plane) -> None:
    await plane.create("pods", _pod("gpu", nodeSelector={"accelerator": "a100"}))
    await plane.unschedulable(
        "gpu",
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
    )
    nodes = plane.info("nodes")
    node = plane.store.peek(nodes, "", "sim-node-1")
    assert node is not None
    labelled = dict(
        node,
        metadata={
            **node["metadata"],
            "labels": {**node["metadata"]["labels"], "accelerator": "a100"},
        },
    )
    await plane.store.update(nodes, "", "sim-node-1", labelled)
    await eventually(lambda: plane.pod_running("gpu"), timeout=15, what="the pod runs")
    pod = plane.get("pods", "gpu")
    assert pod is not None and pod["spec"]["nodeName"] == "sim-node-1"


async def test_required_node_affinity_is_honoured(plane: Plane) -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "kubernetes.io/hostname",
                                "operator": "In",
                                "values": ["sim-node-2"],
                            }
                        ]
                    }
                ]
            }
        }
    }
    await plane.create("pods", _pod("pinned", affinity=affinity))
    await eventually(lambda: plane.pod_running("pinned"), timeout=10)
    pod = plane.get("pods", "pinned")
    assert pod is not None and pod["spec"]["nodeName"] == "sim-node-2"


TAINTED = KubeletConfig(
    running_delay=0.01,
    ready_delay=0.01,
    node_taints=({"key": "dedicated", "value": "ray", "effect": "NoSchedule"},),
)


@pytest.mark.parametrize("plane", [TAINTED], indirect=True, ids=["tainted"])
async def test_taints_need_tolerations(plane: Plane) -> None:
    await plane.create("pods", _pod("plain"))
    await plane.unschedulable(
        "plain",
        "0/3 nodes are available: 3 node(s) had untolerated taint {dedicated: ray}. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
    )
    toleration = {"key": "dedicated", "operator": "Equal", "value": "ray", "effect": "NoSchedule"}
    await plane.create("pods", _pod("tolerant", tolerations=[toleration]))
    await plane.create("pods", _pod("anything", tolerations=[{"operator": "Exists"}]))
    await eventually(lambda: plane.pod_running("tolerant") and plane.pod_running("anything"))


SMALL = KubeletConfig(
    running_delay=0.01,
    ready_delay=0.01,
    nodes=1,
    node_capacity={"cpu": "2", "memory": "4Gi", "pods": "110"},
)


def _asking(cpu: str, **extra: str) -> Obj:
    return {
        "containers": [
            {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu, **extra}}}
        ]
    }


@pytest.mark.parametrize("plane", [SMALL], indirect=True, ids=["one-small-node"])
async def test_requests_are_counted_against_allocatable(plane: Plane) -> None:
    await plane.create("pods", {"metadata": {"name": "big"}, "spec": _asking("1500m")})
    await eventually(lambda: plane.pod_running("big"), timeout=10)
    await plane.create("pods", {"metadata": {"name": "more"}, "spec": _asking("1")})
    await plane.unschedulable(
        "more",
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod.",
    )
    await plane.create(
        "pods", {"metadata": {"name": "gpu"}, "spec": _asking("100m", **{"nvidia.com/gpu": "1"})}
    )
    await plane.unschedulable(
        "gpu",
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are "
        "available: 1 No preemption victims found for incoming pod.",
    )
    await plane.store.delete(plane.info("pods"), NS, "big", grace_period_seconds=0)
    await eventually(lambda: plane.pod_running("more"), timeout=15, what="room freed")


def test_pod_requests() -> None:
    pod = {
        "spec": {
            "containers": [
                {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
                {"resources": {"limits": {"cpu": "500m", "nvidia.com/gpu": "1"}}},
            ],
            "initContainers": [
                {"resources": {"requests": {"cpu": "4"}}},
                {"restartPolicy": "Always", "resources": {"requests": {"cpu": "250m"}}},
            ],
            "overhead": {"memory": "100Mi"},
        }
    }
    assert pod_requests(pod) == {
        "cpu": Fraction(4),
        "memory": 2**30 + 100 * 2**20,
        "nvidia.com/gpu": 1,
    }


GPU_POOL = KubeletConfig(
    running_delay=0.01,
    ready_delay=0.01,
    node_pools=(
        NodePool(
            name="gpu",
            count=2,
            labels={"accelerator": "a100"},
            capacity={"cpu": "8", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "8"},
        ),
    ),
)


@pytest.mark.parametrize("plane", [GPU_POOL], indirect=True, ids=["gpu-pool"])
async def test_a_node_pool_takes_the_pods_that_select_it(plane: Plane) -> None:
    spec = _asking("1", **{"nvidia.com/gpu": "4"})
    await plane.create("pods", {"metadata": {"name": "train"}, "spec": spec})
    selected = {**spec, "nodeSelector": {"accelerator": "a100"}}
    await plane.create("pods", {"metadata": {"name": "pinned"}, "spec": selected})
    await eventually(lambda: plane.pod_running("train") and plane.pod_running("pinned"))
    for name in ("train", "pinned"):
        pod = plane.get("pods", name)
        assert pod is not None and pod["spec"]["nodeName"].startswith("gpu-")
    node = plane.get("nodes", "gpu-1", "")
    assert node is not None and node["metadata"]["labels"]["accelerator"] == "a100"
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"


def test_rayop_apiserver_takes_the_node_capacity(tmp_path: Path) -> None:
    args = ("--nodes", "1", "--node-capacity", "cpu=2", "--node-capacity", "nvidia.com/gpu=1")
    with running_apiserver(tmp_path, *args) as kubeconfig:
        env = kubectl_env(kubeconfig, tmp_path)
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "wide"},
            "spec": _asking("3", **{"nvidia.com/gpu": "1"}),
        }
        apply = [KUBECTL, "apply", "-f", "-"]
        subprocess.run(
            apply, input=json.dumps(pod).encode(), env=env, check=True, capture_output=True
        )
        node = subprocess.run(
            [KUBECTL, "get", "node", "sim-node-0", "-o", "json"],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        allocatable = json.loads(node.stdout)["status"]["allocatable"]
        assert allocatable["cpu"] == "2" and allocatable["nvidia.com/gpu"] == "1"
        assert allocatable["memory"] == DEFAULT_NODE_CAPACITY["memory"]
        wait = subprocess.run(
            [KUBECTL, "wait", "--for=condition=PodScheduled=false", "pod/wide", "--timeout=30s"],
            env=env,
            capture_output=True,
            text=True,
        )
        assert wait.returncode == 0, wait.stderr
        describe = subprocess.run(
            [KUBECTL, "describe", "pod", "wide"],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        assert "FailedScheduling" in describe and "1 Insufficient cpu" in describe
    bad = subprocess.run(
        [sys.executable, "-m", "rayop", "apiserver", "--node-capacity", "cpu=lots"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "expected RESOURCE=QUANTITY" in bad.stderr
