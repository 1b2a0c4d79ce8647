"""Every KubeRay RayService sample reaches Ready on the embedded control plane."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from rayop.kube.resources import PODS, RAY_CLUSTERS, SERVICES
from rayop.testing import eventually
from tests.kuberay_compat import needs_material, sample_docs, sample_names, samples_dir

from .rayservice_env import RayServiceEnv, running_rayservice_operator


def _sample_files() -> list[str]:
    files = []
    for path in sorted(samples_dir().glob("ray-service*.yaml")):
        if any(d.get("kind") == "RayService" for d in sample_docs(path.name)):
            files.append(path.name)
    return files


SAMPLE_FILES = sample_names(_sample_files)
pytestmark = needs_material


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_env() -> AsyncIterator[RayServiceEnv]:
    """One control plane and operator for all samples (each sample in its own namespace)."""
    async with running_rayservice_operator() as env:
        yield env


@pytest.mark.asyncio(loop_scope="module")
async def test_samples_found() -> None:
    # Async on purpose: a sync test here makes looptime create an event loop it never closes.
    assert len(SAMPLE_FILES) >= 10


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("file_name", SAMPLE_FILES)
async def test_sample_reaches_ready(shared_env: RayServiceEnv, file_name: str) -> None:
    env = shared_env
    namespace = "s-" + file_name.removeprefix("ray-service.").removesuffix(".yaml")[:40]
    service = await env.apply_sample(file_name, namespace)
    name = service["metadata"]["name"]
    await eventually(lambda: env.is_ready(namespace, name), timeout=25, what=f"{name} Ready")
    status = env.rayservice(namespace, name)["status"]
    active = status["activeServiceStatus"]
    cluster = active["rayClusterName"]
    assert cluster.startswith(name + "-") and len(cluster) == len(name) + 6
    apps = active["applicationStatuses"]
    assert apps and all(a["status"] == "RUNNING" for a in apps.values())
    assert not status.get("pendingServiceStatus")
    rc = env.stored(RAY_CLUSTERS, namespace, cluster)
    assert rc is not None
    labels = rc["metadata"]["labels"]
    assert labels["ray.io/originated-from-cr-name"] == name
    assert labels["ray.io/originated-from-crd"] == "RayService"
    spec = service["spec"]
    serve_name = ((spec.get("serveService") or {}).get("metadata") or {}).get(
        "name"
    ) or f"{name}-serve-svc"
    serve = env.stored(SERVICES, namespace, serve_name)
    assert serve is not None
    assert serve["spec"]["selector"] == {"ray.io/cluster": cluster, "ray.io/serve": "true"}
    head = env.stored(SERVICES, namespace, f"{name}-head-svc")
    assert head is not None and head["spec"]["selector"]["ray.io/cluster"] == cluster
    assert env.apps_running(namespace, cluster)

    def head_serving() -> bool:
        return any(
            p["metadata"]["labels"].get("ray.io/cluster") == cluster
            and p["metadata"]["labels"].get("ray.io/node-type") == "head"
            and p["metadata"]["labels"].get("ray.io/serve") == "true"
            for p in env.objects(PODS, namespace)
        )

    await eventually(head_serving, timeout=5, what="head pod labelled ray.io/serve=true")
    conflicts = [
        (w.verb, w.subresource)
        for w in env.cp.audit.writes
        if w.resource == "rayservices" and w.namespace == namespace and w.code == 409
    ]
    assert conflicts == [], "a RayService write raced the cache behind our own last write"
