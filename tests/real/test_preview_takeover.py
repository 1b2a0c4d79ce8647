"""``rayop preview`` on a fleet KubeRay v1.7.0 (or v1.6.2) made, checked against what rayop
then does.

KubeRay's binary brings up ``ray-cluster.sample.yaml`` and ``ray-service.sample.yaml`` on
`rayop apiserver` (KubeRay's CRDs applied, ``--use-kubernetes-proxy``) and stops; rayop's CRDs
are applied over KubeRay's, as the switch in docs/operations.md does. ``rayop preview`` must
say nothing disruptive (exit 0), and rayop, started next, must then create and delete no pod and
no RayCluster. A RayService edited while no operator runs must preview as a new RayCluster
(exit 1), and rayop must then create that cluster.

KubeRay v1.6.2 is built from the Go module proxy (``RAYOP_KUBERAY_VERSION=v1.6.2
scripts/controlplane-build kuberay``), and its CRDs are read from the module it was built from.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from rayop.api.crds import build_crds
from rayop.kube.client import KubeClient
from rayop.kube.config import load_config
from rayop.kube.resources import CRDS, NAMESPACES, PODS, RAY_CLUSTERS, RAY_SERVICES
from rayop.testing import ALL_KINDS, eventually, open_operator
from tests.kuberay_compat import crds_dir, needs_material

from .ray_support import load_docs
from .real_support import build, kuberay_running, load_sample, unique_namespace, user_client
from .test_kuberay_on_embedded import running_plane

pytestmark = [
    pytest.mark.real,
    pytest.mark.timeout(400, func_only=True),
    pytest.mark.asyncio(loop_scope="module"),
    needs_material,
]

Obj = dict[str, Any]
WATCH_SECONDS = 20.0


async def _preview(kubeconfig: Path) -> tuple[int, Any, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "rayop",
        "preview",
        "--kubeconfig",
        str(kubeconfig),
        "-o",
        "json",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=os.environ,
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, json.loads(out), err.decode()


async def _ready(client: KubeClient, ns: str) -> bool:
    cluster = await client.get(RAY_CLUSTERS, "raycluster-kuberay", namespace=ns)
    service = await client.get(RAY_SERVICES, "rayservice-sample", namespace=ns)
    conditions = {
        c["type"]: c["status"] for c in (service.get("status") or {}).get("conditions") or []
    }
    return (cluster.get("status") or {}).get("state") == "ready" and conditions.get(
        "Ready"
    ) == "True"


async def _replace_crds(client: KubeClient) -> None:
    """rayop's CRDs over KubeRay's (step 1 of the switch)."""
    for crd in build_crds():
        try:
            live = await client.get(CRDS, crd["metadata"]["name"])
        except Exception:
            await client.create(CRDS, crd)
            continue
        replaced = copy.deepcopy(crd)
        replaced["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
        await client.update(CRDS, replaced)


async def _uids(client: KubeClient, ns: str) -> tuple[list[str], list[str]]:
    pods = (await client.list(PODS, namespace=ns))["items"]
    clusters = (await client.list(RAY_CLUSTERS, namespace=ns))["items"]
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    return sorted(p["metadata"]["uid"] for p in live), sorted(
        c["metadata"]["uid"] for c in clusters
    )


OLDER_KUBERAY = "v1.6.2"
KUBERAY_MODULE = "github.com/ray-project/kuberay/ray-operator"


@pytest.fixture(scope="module")
def older_kuberay() -> tuple[Path, list[Path]]:
    """KubeRay v1.6.2's binary (built from the Go module proxy) and CRD files (from the module)."""
    ok, why = build("kuberay", env={"RAYOP_KUBERAY_VERSION": OLDER_KUBERAY})
    if not ok:
        pytest.fail(f"KubeRay {OLDER_KUBERAY} cannot be built here: {why}")
    cache = os.environ.get("RAYOP_CACHE_DIR") or os.path.expanduser("~/.cache/rayop")
    binary = Path(cache) / "kuberay" / OLDER_KUBERAY / "ray-operator"
    info = subprocess.run(
        ["go", "mod", "download", "-json", f"{KUBERAY_MODULE}@{OLDER_KUBERAY}"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tempfile.gettempdir(),
    )
    crds = sorted(
        (Path(json.loads(info.stdout)["Dir"]) / "config" / "crd" / "bases").glob("*.yaml")
    )
    assert crds, f"no CRDs in {KUBERAY_MODULE}@{OLDER_KUBERAY}"
    return binary, crds


async def test_preview_of_a_kuberay_fleet_matches_what_rayop_then_does(
    tmp_path: Path, kuberay_binary: Path
) -> None:
    await _preview_matches_takeover(tmp_path, kuberay_binary, sorted(crds_dir().glob("*.yaml")))


async def test_preview_of_a_kuberay_v1_6_fleet_matches_what_rayop_then_does(
    tmp_path: Path, older_kuberay: tuple[Path, list[Path]]
) -> None:
    binary, crds = older_kuberay
    await _preview_matches_takeover(tmp_path, binary, crds)


async def _preview_matches_takeover(tmp_path: Path, kuberay: Path, crds: list[Path]) -> None:
    with running_plane(tmp_path) as plane:
        async with user_client(str(plane.kubeconfig)) as client:
            for path in crds:
                await client.create(CRDS, yaml.safe_load(path.read_text()))
            ns = unique_namespace("preview")
            await client.create(NAMESPACES, {"metadata": {"name": ns}})
            async with kuberay_running(
                kuberay,
                str(plane.kubeconfig),
                tmp_path / "ray-operator.log",
                "--use-kubernetes-proxy",
                f"--watch-namespace={ns}",
            ):
                for doc in load_sample("ray-cluster.sample.yaml"):
                    await client.create(RAY_CLUSTERS, doc, namespace=ns)
                for doc in load_docs("ray-service.sample.yaml", "RayService"):
                    await client.create(RAY_SERVICES, doc, namespace=ns)
                await eventually(
                    lambda: _ready(client, ns),
                    timeout=180,
                    interval=0.5,
                    what="KubeRay's cluster ready and service serving",
                )
                await asyncio.sleep(3.0)  # KubeRay's last writes land
            await _replace_crds(client)

            code, report, err = await _preview(plane.kubeconfig)
            assert code == 0, (report, err)
            assert not any(o["disruptive"] for o in report["objects"]), report
            assert len(report["objects"]) == 3, report  # 2 RayClusters, 1 RayService

            before = await _uids(client, ns)
            config = await load_config(kubeconfig=str(plane.kubeconfig))
            async with open_operator(
                config, controllers=ALL_KINDS, watch_namespaces=[ns], use_kubernetes_proxy=True
            ):
                await asyncio.sleep(WATCH_SECONDS)
            assert await _uids(client, ns) == before

            service = await client.get(RAY_SERVICES, "rayservice-sample", namespace=ns)
            head = service["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]
            head["containers"][0].setdefault("env", []).append({"name": "EDITED", "value": "1"})
            await client.update(RAY_SERVICES, service)
            code, report, err = await _preview(plane.kubeconfig)
            assert code == 1, (report, err)
            verdicts = {f"{o['kind']}/{o['name']}": o for o in report["objects"]}
            assert verdicts["RayService/rayservice-sample"]["verdict"] == "new RayCluster", report

            clusters = len(before[1])
            async with open_operator(
                config, controllers=ALL_KINDS, watch_namespaces=[ns], use_kubernetes_proxy=True
            ):

                async def new_cluster() -> bool:
                    listed = await client.list(RAY_CLUSTERS, namespace=ns)
                    return len(listed["items"]) > clusters

                await eventually(new_cluster, timeout=60, what="rayop's new RayService cluster")
