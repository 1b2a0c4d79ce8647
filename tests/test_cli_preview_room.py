"""``rayop preview -f``: can the nodes hold the pods a change would create?

On the embedded plane with two small simulated (kwok-like) nodes of 4 CPUs and 8 GiB each, the
RayCluster sample runs (head 1 CPU 2 GiB, one worker 1 CPU 1 GiB). Previewing more workers that
fit says where they go; more than fit names the pods left out with kube-scheduler's message and
the resource that runs short; a new cluster whose pods fit in total but not on any one node is
told apart from one short in total; a GPU the nodes lack is named; nothing is written.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from rayop.examples import sample_text
from rayop.kube.resources import PODS, RAY_CLUSTERS
from rayop.testing import (
    FAST_KUBELET,
    PlaneUnderTest,
    eventually,
    open_control_plane,
    open_operator,
)

Obj = dict[str, Any]
NS = "room"
SMALL_NODES = dataclasses.replace(
    FAST_KUBELET, nodes=2, node_capacity={"cpu": "4", "memory": "8Gi", "pods": "110"}
)


async def _preview(plane: PlaneUnderTest, path: Path) -> tuple[int, Any, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rayop", "preview", "--kubeconfig", plane.cp.kubeconfig_path,
        "-o", "json", "--timeout", "30", "-f", str(path),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=os.environ,
    )  # fmt: skip
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, json.loads(out), err.decode()


def _sample() -> Obj:
    (doc,) = [d for d in yaml.safe_load_all(sample_text("raycluster")) if d]
    doc["metadata"]["namespace"] = NS
    return dict(doc)


def _write(tmp_path: Path, name: str, *docs: Obj) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def _workers(doc: Obj, replicas: int, **requests: str) -> Obj:
    group = doc["spec"]["workerGroupSpecs"][0]
    group["replicas"] = replicas
    group["maxReplicas"] = max(replicas, group.get("maxReplicas") or 0)
    if requests:
        container = group["template"]["spec"]["containers"][0]
        container["resources"] = {"requests": dict(requests), "limits": dict(requests)}
    return doc


async def test_preview_says_whether_the_nodes_hold_the_new_pods(tmp_path: Path) -> None:
    async with open_control_plane(kubelet=SMALL_NODES) as plane:
        await plane.namespace(NS)
        async with open_operator(plane):
            await plane.create(RAY_CLUSTERS, _sample(), NS)

            async def running() -> bool:
                pods = plane.objects(PODS, NS)
                return len(pods) == 2 and all(p["spec"].get("nodeName") for p in pods)

            await eventually(running, timeout=20, what="the sample's two pods bound")
        pods_before = len(plane.objects(PODS, NS))

        fits = _write(tmp_path, "fits", _workers(_sample(), 3))
        code, report, err = await _preview(plane, fits)
        (verdict,) = report["objects"]
        assert code == 1 and verdict["verdict"] == "create pods", (verdict, err)
        room = verdict["room"]
        assert room["fits"] and room["pods"] == 2 and not room["short"], room
        assert set(room["placed"].values()) <= {"sim-node-0", "sim-node-1"}
        assert any(e.startswith("room: the 2 new pods fit") for e in verdict["effects"]), verdict

        # 9 more workers of 1 CPU: 6 CPUs are free (3 per node), so 3 find no node.
        too_many = _write(tmp_path, "too-many", _workers(_sample(), 10))
        code, report, err = await _preview(plane, too_many)
        (verdict,) = report["objects"]
        room = verdict["room"]
        assert code == 1 and not room["fits"], (verdict, err)
        assert room["pods"] == 9 and len(room["placed"]) == 6 and len(room["unplaced"]) == 3
        message = next(iter(room["unplaced"].values()))
        assert message.startswith("0/2 nodes are available: 2 Insufficient cpu."), message
        assert room["short"] == ["cpu: needed 9, free 6"], room
        assert "room: short of cpu: needed 9, free 6" in verdict["effects"], verdict

        # A new cluster: head 1 CPU, two workers of 3 CPUs: 7 CPUs against 6 free in all.
        big = _workers(_sample(), 2, cpu="3", memory="1Gi")
        big["metadata"]["name"] = "big"
        # A GPU the nodes lack, and memory that fits.
        gpu = _workers(_sample(), 1, cpu="500m", memory="1Gi", **{"nvidia.com/gpu": "1"})
        gpu["metadata"]["name"] = "gpu"
        code, report, err = await _preview(plane, _write(tmp_path, "new", big, gpu))
        verdicts = {v["name"]: v for v in report["objects"]}
        assert code == 1, err
        assert verdicts["big"]["effects"][0] == "not live: the file creates it"
        assert verdicts["big"]["verdict"] == "create pods", verdicts
        big_room = verdicts["big"]["room"]
        assert big_room["pods"] == 3 and len(big_room["unplaced"]) == 1, big_room
        assert big_room["short"] == ["cpu: needed 7, free 6"], big_room
        gpu_room = verdicts["gpu"]["room"]  # placed after big, on what big left
        (gpu_worker,) = [p for p in gpu_room["unplaced"] if "workers" in p]
        assert "Insufficient nvidia.com/gpu" in gpu_room["unplaced"][gpu_worker], gpu_room
        assert "nvidia.com/gpu: needed 1, free 0" in gpu_room["short"], gpu_room

        assert len(plane.objects(PODS, NS)) == pods_before
        assert plane.stored(RAY_CLUSTERS, NS, "big") is None
