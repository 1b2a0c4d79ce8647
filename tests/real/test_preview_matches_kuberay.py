"""``rayop preview -f``'s verdict for an edit of a sample is what KubeRay v1.7.0 then does.

KubeRay's binary runs ``ray-cluster.sample.yaml``, ``ray-job.sample.yaml`` (its job kept
running) and ``ray-service.sample.yaml`` on `rayop apiserver` (KubeRay's CRDs,
``--use-kubernetes-proxy``, the API server's audit log written to a file). For each edit of
:mod:`tests.preview_edits` (the same edits and expected verdicts the embedded plane checks rayop
against) the edited object is previewed with ``-f``, then applied while KubeRay runs; the audit
log since the apply shows what KubeRay did (pods created and deleted, RayClusters created and
deleted, Jobs created and deleted), and it must agree with the verdict.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from rayop.kube.client import KubeClient
from rayop.kube.resource import Resource
from rayop.kube.resources import CONFIGMAPS, CRDS, NAMESPACES, RAY_CLUSTERS, RAY_JOBS, RAY_SERVICES
from rayop.preview.rendering import settled
from rayop.testing import eventually
from tests.kuberay_compat import crds_dir, needs_material
from tests.preview_edits import (
    CLUSTER_EDITS,
    JOB_EDITS,
    LONG_ENTRYPOINT,
    QUIET,
    SERVICE_EDITS,
    Observed,
    agrees,
    observed,
)

from .ray_support import load_docs
from .real_support import kuberay_running, load_sample, unique_namespace, user_client
from .test_kuberay_on_embedded import running_plane

pytestmark = [
    pytest.mark.real,
    pytest.mark.timeout(900, func_only=True),
    pytest.mark.asyncio(loop_scope="module"),
    needs_material,
]

Obj = dict[str, Any]
QUIET_SECONDS = 5.0
"""How long an edit previewed as non-disruptive is watched for pod or cluster writes."""


async def _preview(kubeconfig: Path, path: Path) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rayop", "preview", "--kubeconfig", str(kubeconfig),
        "-o", "json", "--timeout", "60", "-f", str(path),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=os.environ,
    )  # fmt: skip
    out, err = await proc.communicate()
    report = json.loads(out)
    assert not report["problems"], (report, err.decode())
    (verdict,) = report["objects"]
    return str(verdict["verdict"])


def _writes_since(audit: Path, ns: str, since: float) -> Observed:
    """What the audit logged in ``ns`` since ``since`` (:func:`observed`)."""
    records = [json.loads(line) for line in audit.read_text().splitlines() if line.strip()]
    return observed(
        (r["verb"], r["resource"], r["code"])
        for r in records
        if r["time"] >= since and r["namespace"] == ns
    )


async def _all_settled(client: KubeClient, ns: str) -> bool:
    listed = [
        {"kind": kind, **o}
        for kind, r in (
            ("RayCluster", RAY_CLUSTERS),
            ("RayJob", RAY_JOBS),
            ("RayService", RAY_SERVICES),
        )
        for o in (await client.list(r, namespace=ns))["items"]
    ]
    return bool(listed) and all(settled(o) for o in listed)


async def test_each_edits_verdict_is_what_kuberay_then_does(
    tmp_path: Path, kuberay_binary: Path
) -> None:
    audit = tmp_path / "audit.jsonl"
    with running_plane(tmp_path, "--audit-log-path", str(audit)) as plane:
        async with user_client(str(plane.kubeconfig)) as client:
            for path in sorted(crds_dir().glob("*.yaml")):
                await client.create(CRDS, yaml.safe_load(path.read_text()))
            ns = unique_namespace("edits")
            await client.create(NAMESPACES, {"metadata": {"name": ns}})
            async with kuberay_running(
                kuberay_binary,
                str(plane.kubeconfig),
                tmp_path / "ray-operator.log",
                "--use-kubernetes-proxy",
                f"--watch-namespace={ns}",
            ):
                (cluster,) = load_sample("ray-cluster.sample.yaml")
                await client.create(RAY_CLUSTERS, cluster, namespace=ns)
                (service,) = load_docs("ray-service.sample.yaml", "RayService")
                await client.create(RAY_SERVICES, service, namespace=ns)
                for code in load_docs("ray-job.sample.yaml", "ConfigMap"):
                    await client.create(CONFIGMAPS, code, namespace=ns)
                (job,) = load_docs("ray-job.sample.yaml", "RayJob")
                job["spec"]["entrypoint"] = LONG_ENTRYPOINT
                job["spec"]["shutdownAfterJobFinishes"] = True  # or suspend is refused
                await client.create(RAY_JOBS, job, namespace=ns)
                edits: list[tuple[Resource, str, Any, str]] = [
                    (RAY_CLUSTERS, cluster["metadata"]["name"], e, v) for e, v in CLUSTER_EDITS
                ]
                # before the RayService's: its upgrade deletes the old cluster a while after
                edits += [(RAY_JOBS, job["metadata"]["name"], e, v) for e, v in JOB_EDITS]
                edits += [
                    (RAY_SERVICES, service["metadata"]["name"], e, v) for e, v in SERVICE_EDITS
                ]
                seen: list[tuple[str, str, Observed]] = []
                for i, (resource, name, edit, expected) in enumerate(edits):
                    await eventually(
                        lambda: _all_settled(client, ns), timeout=180, interval=0.5,
                        what="KubeRay's objects settled",
                    )  # fmt: skip
                    await asyncio.sleep(2.0)  # KubeRay's last status writes land
                    live = await client.get(resource, name, namespace=ns)
                    edited = copy.deepcopy(live)
                    edited["apiVersion"], edited["kind"] = resource.api_version, resource.kind
                    edit(edited)
                    path = tmp_path / f"edit-{i}.yaml"
                    path.write_text(yaml.safe_dump(edited))
                    verdict = await _preview(plane.kubeconfig, path)
                    since = time.time()
                    await client.update(resource, edited)
                    if verdict in QUIET:
                        await asyncio.sleep(QUIET_SECONDS)
                    else:

                        async def acted(v: str = verdict, t: float = since) -> bool:
                            return agrees(v, *_writes_since(audit, ns, t))

                        await eventually(
                            acted, timeout=60, what=f"KubeRay acting on {edit.__name__}"
                        )
                    observed = _writes_since(audit, ns, since)
                    seen.append((edit.__name__, verdict, observed))
                    assert verdict == expected, seen
                    assert agrees(verdict, *observed), seen
