"""rayop's ``rest_client_*`` metrics are KubeRay v1.7.0's: names, types, help, labels, buckets.

KubeRay's operator runs against `rayop apiserver` with its metrics port open; once its caches
have synced, every ``rest_client_*`` family its /metrics shows must be one of rayop's, with the
same type, help text, label names and histogram buckets. Go's client hides a family that was
never observed (KubeRay's DNS histogram, since its server is an IP address, and its retries
counter); rayop's families missing from KubeRay's page must be registered in KubeRay's source
(``controllers/ray/metrics/client_go_metrics.go``) instead.
"""

from __future__ import annotations

import asyncio
import socket
import tarfile
import urllib.request
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from rayop.kube.metrics import RestClientMetrics
from rayop.kube.resources import CRDS
from rayop.runtime.metrics import OperatorMetrics
from tests import kuberay_compat

from .real_support import kuberay_running, user_client
from .test_kuberay_on_embedded import running_plane

pytestmark = pytest.mark.real

CLIENT_GO_METRICS = "ray-operator/controllers/ray/metrics/client_go_metrics.go"


def _families(text: str) -> dict[str, Metric]:
    return {
        f.name: f for f in text_string_to_metric_families(text) if f.name.startswith("rest_client")
    }


def _shape(family: Metric) -> tuple[str, str, set[str], set[float]]:
    """Type, help, label names (``le`` aside) and bucket bounds of one family."""
    labels = {k for s in family.samples for k in s.labels if k != "le"}
    bounds = {float(s.labels["le"]) for s in family.samples if "le" in s.labels}
    return family.type, family.documentation, labels, bounds


def _rayops() -> dict[str, Metric]:
    """rayop's families as its /metrics renders them, each observed once so that every bucket
    and label shows."""
    operator = OperatorMetrics(CollectorRegistry())
    metrics = RestClientMetrics(operator.registry)
    metrics.observe_attempt(200, "GET", "h")
    metrics.observe_request("GET", "h", 0.01)
    metrics.observe_rate_limiter("GET", "h", 0.0)
    metrics.observe_retry(429, "GET", "h")
    metrics.observe_request_size("GET", "h", 0)
    metrics.observe_response_size("GET", "h", 10)
    metrics.observe_dns_resolution("h", 0.01)
    return _families(operator.render().decode())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def _scrape_after_sync(url: str, timeout: float = 60.0) -> str:
    """KubeRay's /metrics once its size histograms show (its caches have listed)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            text = await asyncio.to_thread(_get, url)
            if "rest_client_response_size_bytes_count" in text:
                return text
        except OSError:
            pass
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"KubeRay's {url} never showed its client metrics")
        await asyncio.sleep(0.5)


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        body: bytes = response.read()
        return body.decode()


async def test_kuberays_client_metrics_are_rayops(tmp_path: Path, kuberay_binary: Path) -> None:
    port = _free_port()
    with running_plane(tmp_path) as plane:
        async with user_client(str(plane.kubeconfig)) as client:
            for path in sorted(kuberay_compat.crds_dir().glob("*.yaml")):
                await client.create(CRDS, yaml.safe_load(path.read_text()))
        async with kuberay_running(
            kuberay_binary,
            str(plane.kubeconfig),
            tmp_path / "ray-operator.log",
            metrics_addr=f"127.0.0.1:{port}",
        ):
            kuberay = _families(await _scrape_after_sync(f"http://127.0.0.1:{port}/metrics"))
    rayop = _rayops()
    assert {"rest_client_request_size_bytes", "rest_client_response_size_bytes"} <= set(kuberay)
    for name, family in kuberay.items():
        assert name in rayop, f"KubeRay exposes {name}, rayop does not"
        assert _shape(rayop[name]) == _shape(family), name
    with tarfile.open(kuberay_compat.require() / kuberay_compat.SOURCE_ARCHIVE) as tar:
        member = tar.extractfile(CLIENT_GO_METRICS)
        assert member is not None
        source = member.read().decode()
    for name in set(rayop) - set(kuberay):
        assert f'"{name}' in source, f"rayop exposes {name}, KubeRay does not register it"
