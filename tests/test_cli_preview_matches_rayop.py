"""``rayop preview -f``'s verdict for an edit of a sample is what rayop then does.

On the embedded plane rayop runs the RayCluster, RayJob (kept running) and RayService samples.
For each edit (a worker env var, rayStartParams, labels, tolerations, replicas, upgradeStrategy
Recreate, suspend; a running RayJob's labels and suspend; a RayService's Serve config and image)
the edited object is previewed with ``-f``, then applied; the API server's audit log since the
apply shows what rayop did: pods created and deleted, RayClusters created and deleted, Jobs
created and deleted. Each verdict must be the one expected for that edit and must agree with the
audit: a non-disruptive verdict none of those; ``create pods`` pods created and none deleted;
``recreate pods`` pods deleted; ``job`` a RayCluster or Job deleted (or a Job created) and no
pod or RayCluster created; ``new RayCluster`` a RayCluster.
(The same edits under KubeRay v1.7.0 are the real tier's business: ``tests/real``.)
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

from rayop.examples import sample_text
from rayop.kube.resources import RAY_CLUSTERS, RAY_JOBS, RAY_SERVICES
from rayop.preview.manifests import CONTEXT_KINDS, RAY_KINDS
from rayop.preview.rendering import settled
from rayop.testing import ALL_KINDS, PlaneUnderTest, eventually, open_control_plane, open_operator
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

pytestmark = pytest.mark.timeout(600)

Obj = dict[str, Any]
NS = "edits"
QUIET_SECONDS = 3.0
"""How long an edit previewed as non-disruptive is watched for pod or cluster writes."""


async def _preview(plane: PlaneUnderTest, path: Path) -> Obj:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rayop", "preview", "--kubeconfig", plane.cp.kubeconfig_path,
        "-o", "json", "--timeout", "30", "-f", str(path),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=os.environ,
    )  # fmt: skip
    out, err = await proc.communicate()
    report = json.loads(out)
    assert not report["problems"], (report, err.decode())
    (verdict,) = report["objects"]
    return dict(verdict)


def _writes_since(plane: PlaneUnderTest, since: float) -> Observed:
    """What the audit recorded in :data:`NS` since ``since`` (:func:`observed`)."""
    writes = plane.cp.audit.writes
    return observed(
        (w.verb, w.resource, w.code) for w in writes if w.time >= since and w.namespace == NS
    )


async def _all_settled(plane: PlaneUnderTest) -> bool:
    objs = [o for r in (RAY_CLUSTERS, RAY_JOBS, RAY_SERVICES) for o in plane.objects(r, NS)]
    return bool(objs) and all(settled(o) for o in objs)


async def test_each_edits_verdict_is_what_rayop_then_does(tmp_path: Path) -> None:
    async with open_control_plane() as plane:
        await plane.namespace(NS)
        async with open_operator(plane, controllers=ALL_KINDS):
            for sample in ("raycluster", "rayjob", "rayservice"):
                for doc in yaml.safe_load_all(sample_text(sample)):
                    if doc and doc["kind"] == "RayJob":
                        doc["spec"]["entrypoint"] = LONG_ENTRYPOINT
                    if doc:
                        await plane.create({**RAY_KINDS, **CONTEXT_KINDS}[doc["kind"]], doc, NS)
            seen: list[tuple[str, str, Observed]] = []
            edits = [("RayCluster", "raycluster-sample", e, v) for e, v in CLUSTER_EDITS]
            # before the RayService's: its upgrade deletes the old cluster a while after
            edits += [("RayJob", "rayjob-sample", e, v) for e, v in JOB_EDITS]
            edits += [("RayService", "rayservice-sample", e, v) for e, v in SERVICE_EDITS]
            for i, (kind, name, edit, expected) in enumerate(edits):
                await eventually(lambda: _all_settled(plane), timeout=60, what="the fleet settled")
                await asyncio.sleep(1.0)  # the last status writes land
                resource = RAY_KINDS[kind]
                live = plane.stored(resource, NS, name)
                assert live is not None
                edited = copy.deepcopy(live)
                edit(edited)
                path = tmp_path / f"edit-{i}.yaml"
                path.write_text(yaml.safe_dump(edited))
                verdict = (await _preview(plane, path))["verdict"]
                since = time.time()
                await plane.client.update(resource, edited)
                if verdict in QUIET:
                    await asyncio.sleep(QUIET_SECONDS)
                else:

                    async def acted(v: str = verdict, t: float = since) -> bool:
                        return agrees(v, *_writes_since(plane, t))

                    await eventually(acted, timeout=30, what=f"rayop acting on {edit.__name__}")
                observed = _writes_since(plane, since)
                seen.append((edit.__name__, verdict, observed))
                assert verdict == expected, seen
                assert agrees(verdict, *observed), seen
