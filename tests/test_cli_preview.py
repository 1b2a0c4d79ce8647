"""``rayop preview``: the first pass over each live ray.io object, nothing written.

On the embedded plane: a fleet rayop made and left settled previews as nothing disruptive; a spec
edited while no operator ran previews as disruptive, named (a RayService's new cluster with its
size, a RayCluster's new pods); the API server sees no write during a preview; an object the
operator refuses, a missing object and a cluster without the CRDs are reported in one line each,
exit 2, the rest still printed. ``-f FILE`` previews an edit not yet applied, persisting
nothing. ``rayop preview`` runs as a process, as a pipeline runs it.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from rayop.examples import sample_text
from rayop.kube.resources import RAY_CLUSTERS, RAY_JOBS, RAY_SERVICES
from rayop.preview.manifests import CONTEXT_KINDS, RAY_KINDS
from rayop.preview.rendering import settled
from rayop.testing import ALL_KINDS, PlaneUnderTest, eventually, open_control_plane, open_operator

Obj = dict[str, Any]
NS = "fleet"


async def _preview(plane: PlaneUnderTest, *args: str) -> tuple[int, Any, str]:
    """Runs ``rayop preview -o json`` against the plane: (exit code, report, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "rayop",
        "preview",
        "--kubeconfig",
        plane.cp.kubeconfig_path,
        "-o",
        "json",
        "--timeout",
        "30",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=os.environ,
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, json.loads(out), err.decode()


def _by_name(report: Any) -> dict[str, Obj]:
    return {f"{o['kind']}/{o['name']}": o for o in report["objects"]}


async def _fleet(plane: PlaneUnderTest) -> None:
    """rayop brings up the RayCluster, RayJob and RayService samples, then stops."""
    await plane.namespace(NS)
    async with open_operator(plane, controllers=ALL_KINDS):
        for sample in ("raycluster", "rayjob", "rayservice"):
            for doc in yaml.safe_load_all(sample_text(sample)):
                if doc:
                    await plane.create({**RAY_KINDS, **CONTEXT_KINDS}[doc["kind"]], doc, NS)

        async def all_settled() -> bool:
            objs = [o for r in (RAY_CLUSTERS, RAY_JOBS, RAY_SERVICES) for o in plane.objects(r, NS)]
            job = plane.objects(RAY_JOBS, NS)[0]
            done = (job.get("status") or {}).get("jobDeploymentStatus") == "Complete"
            return done and all(settled(o) for o in objs if o["kind"] != "RayJob")

        await eventually(all_settled, timeout=30, what="the fleet settled")
        await asyncio.sleep(2.0)  # the last writes of the passes land


async def test_a_fleet_rayop_made_previews_as_nothing_disruptive() -> None:
    async with open_control_plane() as plane:
        await _fleet(plane)
        writes_before = len(plane.cp.audit.writes)
        code, report, err = await _preview(plane)
        assert len(plane.cp.audit.writes) == writes_before, "preview wrote to the API server"
    assert code == 0, (report, err)
    verdicts = _by_name(report)
    assert verdicts["RayCluster/raycluster-sample"]["verdict"] == "nothing"
    assert verdicts["RayJob/rayjob-sample"]["verdict"] == "nothing"
    service = verdicts["RayService/rayservice-sample"]
    # rayop keeps the Serve config it sent in memory, as KubeRay does: a new process sends it
    # again (the same config: Ray keeps the applications running).
    assert service["verdict"] in ("nothing", "update in place"), service
    assert all("serve" in e for e in service["effects"]), service
    assert not report["disruptive"] and not report["problems"]


async def test_a_spec_edited_while_no_operator_ran_is_disruptive_and_named() -> None:
    async with open_control_plane() as plane:
        await _fleet(plane)
        service = copy.deepcopy(plane.objects(RAY_SERVICES, NS)[0])
        head = service["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]
        head["containers"][0].setdefault("env", []).append({"name": "EDITED", "value": "1"})
        await plane.client.update(RAY_SERVICES, service)
        cluster = copy.deepcopy(plane.stored(RAY_CLUSTERS, NS, "raycluster-sample"))
        assert cluster is not None
        cluster["spec"]["workerGroupSpecs"][0]["replicas"] += 1
        await plane.client.update(RAY_CLUSTERS, cluster)
        writes_before = len(plane.cp.audit.writes)
        code, report, err = await _preview(plane)
        assert len(plane.cp.audit.writes) == writes_before, "preview wrote to the API server"
    assert code == 1, (report, err)
    verdicts = _by_name(report)
    upgrade = verdicts["RayService/rayservice-sample"]
    assert upgrade["verdict"] == "new RayCluster" and upgrade["disruptive"]
    (effect,) = upgrade["effects"]
    assert "zero-downtime upgrade" in effect and "2 pods (head + 1 workers)" in effect, effect
    assert "cpu 2" in effect and "memory 3Gi" in effect, effect
    scaled = verdicts["RayCluster/raycluster-sample"]
    assert scaled["verdict"] == "create pods", scaled
    assert scaled["effects"] == ["create Pod fleet/raycluster-sample-workers-worker-*"], scaled
    assert any(r.startswith("CreatedWorkerPod:") for r in scaled["reasons"]), scaled


async def test_named_objects_only_and_a_missing_one_is_reported_with_the_rest() -> None:
    async with open_control_plane() as plane:
        await _fleet(plane)
        code, report, err = await _preview(
            plane, "-n", NS, "raycluster/raycluster-sample", "rayservice/absent"
        )
    assert code == 2
    assert [o["name"] for o in report["objects"]] == ["raycluster-sample"]
    (problem,) = report["problems"]
    assert problem.startswith(f"RayService/{NS}/absent: not found in namespace {NS}"), problem
    assert "rayop: RayService/fleet/absent" in err


async def test_an_object_the_operator_refuses_is_named_with_the_reason() -> None:
    async with open_control_plane() as plane:
        await plane.namespace(NS)
        doc = next(d for d in yaml.safe_load_all(sample_text("raycluster")) if d)
        group = doc["spec"]["workerGroupSpecs"][0]
        group["minReplicas"], group["maxReplicas"] = 3, 2
        await plane.create(RAY_CLUSTERS, doc, NS)
        code, report, _ = await _preview(plane)
    assert code == 2
    (verdict,) = report["objects"]
    assert verdict["verdict"] == "refused" and verdict["disruptive"]
    assert verdict["effects"][0].startswith('RayCluster.ray.io "raycluster-sample" is invalid:')


async def test_a_cluster_without_the_crds_is_one_line_per_kind() -> None:
    async with open_control_plane(crds=False) as plane:
        code, report, err = await _preview(plane)
    assert code == 2 and report["objects"] == []
    assert err.count("rayop: ") == 3, err
    assert [p.split(":")[0] for p in report["problems"]] == [
        "rayclusters",
        "rayjobs",
        "rayservices",
    ]
    assert all("CRD installed?" in p for p in report["problems"]), report


def _sample_file(tmp_path: Path, sample: str, image: str | None = None) -> str:
    docs = [d for d in yaml.safe_load_all(sample_text(sample)) if d]
    for doc in docs:
        doc["metadata"]["namespace"] = NS
        if image and doc["kind"] == "RayService":
            spec = doc["spec"]["rayClusterConfig"]
            for group in [spec["headGroupSpec"], *spec["workerGroupSpecs"]]:
                group["template"]["spec"]["containers"][0]["image"] = image
    path = tmp_path / f"{sample}.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


async def test_a_file_edit_previews_as_the_upgrade_it_starts_and_persists_nothing(
    tmp_path: Path,
) -> None:
    async with open_control_plane() as plane:
        await _fleet(plane)
        before = plane.stored(RAY_SERVICES, NS, "rayservice-sample")
        assert before is not None
        edited = _sample_file(tmp_path, "rayservice", image="rayproject/ray:2.61.0")
        code, report, err = await _preview(plane, "-f", edited)
        after = plane.stored(RAY_SERVICES, NS, "rayservice-sample")
        assert after is not None
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
        assert len(plane.objects(RAY_CLUSTERS, NS)) == 3  # no cluster created
        same_code, same, _ = await _preview(plane, "-f", _sample_file(tmp_path, "rayservice"))
    assert code == 1, (report, err)
    (verdict,) = report["objects"]
    assert verdict["verdict"] == "new RayCluster", verdict
    assert "2 pods (head + 1 workers), cpu 2, memory 3Gi" in verdict["effects"][0], verdict
    assert same_code == 0, same
    assert not same["objects"][0]["disruptive"], same


async def test_a_file_with_an_invalid_edit_is_refused_and_named(tmp_path: Path) -> None:
    async with open_control_plane() as plane:
        await _fleet(plane)
        docs = [d for d in yaml.safe_load_all(sample_text("raycluster")) if d]
        docs[0]["metadata"]["namespace"] = NS
        group = docs[0]["spec"]["workerGroupSpecs"][0]
        group["minReplicas"], group["maxReplicas"] = 3, 2
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump_all(docs))
        code, report, _ = await _preview(plane, "-f", str(path))
    assert code == 2
    (verdict,) = report["objects"]
    assert verdict["verdict"] == "refused", verdict
    assert verdict["effects"][0].startswith('RayCluster.ray.io "raycluster-sample" is invalid:')
