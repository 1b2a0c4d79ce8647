"""KubeRay v1.7.0 in its default, direct dashboard mode against `rayop apiserver`.

Without ``--use-kubernetes-proxy`` KubeRay calls each head's dashboard at
``http://<head service>.<ns>.svc.cluster.local:8265`` and checks its Serve proxy at
``http://<pod IP>:8000``: names and addresses that only a cluster's DNS and pod network make
reachable. `rayop apiserver --http-proxy-port` serves a forward proxy into the embedded plane
(:mod:`rayop.sim.dashboard.http_proxy`), and KubeRay runs with ``HTTP_PROXY`` pointing at it (Go's
HTTP client honours it; the API server on loopback is reached directly). The RayJob and
RayService samples must converge as in :mod:`test_kuberay_on_embedded`, with no request
refused and none through the API server's proxy subresources.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
import yaml

from rayop.kube.client import KubeClient
from rayop.kube.resources import CRDS
from tests.kuberay_compat import crds_dir, needs_material

from .real_support import kuberay_running, user_client
from .test_kuberay_on_embedded import (
    Plane,
    ray_job_sample_succeeds,
    ray_service_sample_is_ready_with_the_head_serving,
    refused_requests,
    request_counts,
    running_plane,
)

pytestmark = [pytest.mark.real, pytest.mark.asyncio(loop_scope="module"), needs_material]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def proxy_port() -> int:
    """The loopback port of the plane's forward proxy."""
    return _free_port()


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory, proxy_port: int) -> Iterator[Plane]:
    """Runs `rayop apiserver` with its forward proxy for the module."""
    workdir = tmp_path_factory.mktemp("kuberay-direct")
    with running_plane(workdir, "--http-proxy-port", str(proxy_port)) as running:
        yield running


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(plane: Plane) -> AsyncIterator[KubeClient]:
    """A user client of the plane, with KubeRay's CRDs applied."""
    async with user_client(str(plane.kubeconfig)) as c:
        for path in sorted(crds_dir().glob("*.yaml")):
            await c.create(CRDS, yaml.safe_load(path.read_text()))
        yield c


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def kuberay(
    plane: Plane, client: KubeClient, kuberay_binary: Path, proxy_port: int
) -> AsyncIterator[Path]:
    """Runs KubeRay in direct mode, through the plane's proxy, for the module."""
    log_path = plane.workdir / "ray-operator.log"
    proxy = f"http://127.0.0.1:{proxy_port}"
    async with kuberay_running(
        kuberay_binary,
        str(plane.kubeconfig),
        log_path,
        "--reconcile-concurrency=4",
        env={"HTTP_PROXY": proxy, "http_proxy": proxy, "NO_PROXY": "", "no_proxy": ""},
    ):
        yield log_path


async def test_ray_job_sample_succeeds_in_direct_mode(client: KubeClient, kuberay: Path) -> None:
    await ray_job_sample_succeeds(client)


async def test_ray_service_sample_is_ready_in_direct_mode(
    client: KubeClient, kuberay: Path
) -> None:
    await ray_service_sample_is_ready_with_the_head_serving(client)


async def test_nothing_refused_and_nothing_through_the_proxy_subresources(
    plane: Plane, kuberay: Path
) -> None:
    """Runs last: KubeRay reached the dashboards directly, never through the API server."""
    assert not refused_requests(plane)
    proxied = [line for line, m in request_counts(plane) if m.group(3) == "proxy"]
    assert not proxied, "\n".join(proxied)
