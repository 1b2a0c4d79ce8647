"""``rayop explain KIND/NAME``: a running operator's last passes over one object.

On the embedded plane, rayop brings up the RayCluster sample; ``rayop explain`` (as a process,
reading the operator's ``/debug/decisions``) shows the passes that created its pods: the pod
creates it sent, the Events that say why, and when it looks again. An object the operator never
reconciled exits 1; an operator that does not answer, or a target that is not KIND/NAME, exits 2
with one line saying so.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import yaml

from rayop.cli.explain import ExplainError, next_look, parse_target
from rayop.examples import sample_text
from rayop.kube.resources import PODS, RAY_CLUSTERS
from rayop.runtime.serving.endpoints import HttpServer, metrics_app
from rayop.testing import RunningOperator, eventually, open_control_plane, open_operator

NS = "explained"


async def _explain(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "rayop",
        "explain",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=os.environ,
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@asynccontextmanager
async def _served(running: RunningOperator) -> AsyncIterator[str]:
    """Serves the operator's metrics app (as ``rayop run`` does) on a free port; yields its URL."""
    app = metrics_app(running.manager.render_metrics, running.manager.decisions.explain)
    server = HttpServer(app, "127.0.0.1", 0)
    await server.start()
    try:
        yield f"http://127.0.0.1:{server.port}"
    finally:
        await server.stop()


async def test_explain_shows_the_passes_that_created_a_clusters_pods() -> None:
    async with open_control_plane() as plane:
        await plane.namespace(NS)
        async with open_operator(plane) as running, _served(running) as url:
            (doc,) = [d for d in yaml.safe_load_all(sample_text("raycluster")) if d]
            await plane.create(RAY_CLUSTERS, doc, NS)
            name = doc["metadata"]["name"]

            async def pods_made() -> bool:
                return len(plane.objects(PODS, NS)) >= 2

            await eventually(pods_made, timeout=20, what="the head and worker pods")
            code, out, err = await _explain(f"raycluster/{name}", "-n", NS, "--operator", url)
            assert code == 0, err
            assert f"RayCluster {NS}/{name}: the operator's last" in out
            assert f"wrote:  POST /api/v1/namespaces/{NS}/pods/{name}-head" in out, out
            assert "event:  Normal CreatedHeadPod" in out, out
            assert "next:" in out
            code, raw, err = await _explain(
                f"rayclusters/{name}", "-n", NS, "--operator", url, "-o", "json"
            )
            assert code == 0, err
            passes = json.loads(raw)["passes"]
            assert passes and all(p["kind"] == "RayCluster" for p in passes)
            assert any(p["controller"] == "raycluster" for p in passes), passes
            code, _, err = await _explain("raycluster/never-made", "-n", NS, "--operator", url)
            assert code == 1 and "kept no pass of RayCluster explained/never-made" in err
            code, _, err = await _explain("rayjob/" + name, "-n", NS, "--operator", url)
            assert code == 1, err  # a RayCluster of that name is not a RayJob


async def test_an_operator_that_does_not_answer_and_a_bad_target_exit_2() -> None:
    code, _, err = await _explain(
        "raycluster/x", "--operator", "http://127.0.0.1:9", "--timeout", "2"
    )
    assert code == 2 and "cannot read the operator at http://127.0.0.1:9/debug/decisions" in err
    code, _, err = await _explain("pod/x")
    assert code == 2 and "rayop reconciles RayCluster, RayCronJob, RayJob, RayService" in err
    code, _, err = await _explain("raycluster")
    assert code == 2 and "want KIND/NAME" in err


def test_targets_and_next_looks() -> None:
    assert parse_target("RayService.ray.io/svc") == ("RayService", "svc")
    for bad in ("raycluster/", "raycluster/a/b", "/x"):
        try:
            parse_target(bad)
        except ExplainError:
            continue
        raise AssertionError(bad)
    assert next_look({"outcome": "requeue_after", "nextIn": 300.0}).startswith("again in 300 s")
    assert "backoff (retry 3)" in next_look({"outcome": "error", "retries": 3})
    assert next_look({"outcome": "terminal"}).startswith("not again until the object changes")
    assert next_look({"outcome": "done"}) == "on the next change of the object or of what it owns"
