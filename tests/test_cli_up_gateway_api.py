"""`rayop up` installs the Gateway API CRDs: from the cache, else from the Go module proxy (here a
``file://`` proxy built from the cached CRDs, so no network is used), and the plane's GatewayClasses
are then accepted; without either it logs one line and goes on."""

from __future__ import annotations

import logging
import zipfile
from pathlib import Path

import pytest

from rayop.cli.gateway_api_crds import (
    DEFAULT_VERSION,
    MODULE,
    STAMP,
    CrdsUnavailable,
    cache_dir,
    load_crds,
)
from rayop.cli.up import install_gateway_api
from rayop.kube.resource import Resource
from rayop.testing import eventually, open_control_plane

GATEWAY_CLASSES = Resource(
    "gateway.networking.k8s.io", "v1", "gatewayclasses", "GatewayClass", namespaced=False
)


@pytest.fixture(scope="module")
def cached_crds() -> list[Path]:
    """The CRD files of the user's cache (skips when they are neither cached nor downloadable)."""
    try:
        load_crds()
    except CrdsUnavailable as exc:
        pytest.skip(f"Gateway API CRDs not available: {exc}")
    return sorted((cache_dir() / "crds").glob("*.yaml"))


@pytest.fixture
def proxy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cached_crds: list[Path]) -> Path:
    """An empty cache and a file:// module proxy serving the module zip with those CRDs."""
    zip_path = tmp_path / "proxy" / MODULE / "@v" / f"{DEFAULT_VERSION}.zip"
    zip_path.parent.mkdir(parents=True)
    with zipfile.ZipFile(zip_path, "w") as archive:
        prefix = f"{MODULE}@{DEFAULT_VERSION}/config/crd/"
        for path in cached_crds:
            archive.writestr(prefix + "standard/" + path.name, path.read_bytes())
        archive.writestr(prefix + "experimental/ignored.yaml", "kind: Nothing\n")
        archive.writestr(f"{MODULE}@{DEFAULT_VERSION}/README.md", "not a CRD\n")
    monkeypatch.setenv("RAYOP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RAYOP_GATEWAY_API_VERSION", raising=False)
    monkeypatch.setenv("GOPROXY", f"off,file://{tmp_path / 'proxy'},direct")
    return tmp_path


def test_load_fetches_into_the_cache_then_reads_it(proxy: Path, cached_crds: list[Path]) -> None:
    with pytest.raises(CrdsUnavailable, match="not cached"):
        load_crds(download=False)
    crds = load_crds()
    out = proxy / "cache" / "gateway-api" / DEFAULT_VERSION
    assert (out / STAMP).read_text() == f"{DEFAULT_VERSION}\n"
    assert sorted(p.name for p in (out / "crds").glob("*.yaml")) == [p.name for p in cached_crds]
    assert {c["spec"]["names"]["kind"] for c in crds} >= {"GatewayClass", "Gateway", "HTTPRoute"}
    (proxy / "proxy").rename(proxy / "gone")  # the cache alone answers now
    assert load_crds() == crds


def test_no_proxy_no_cache(proxy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOPROXY", "off")
    with pytest.raises(CrdsUnavailable, match="GOPROXY"):
        load_crds()
    monkeypatch.setenv("GOPROXY", f"file://{proxy / 'nowhere'}")
    with pytest.raises(CrdsUnavailable, match="cannot download"):
        load_crds()


async def test_up_installs_them_and_the_plane_accepts_its_classes(proxy: Path) -> None:
    async with open_control_plane() as plane:
        await install_gateway_api(plane.config)
        await install_gateway_api(plane.config)  # a second run keeps what is there

        async def accepted() -> bool:
            for name in ("rayop", "istio"):
                stored = plane.stored(GATEWAY_CLASSES, "", name)
                conditions = ((stored or {}).get("status") or {}).get("conditions") or []
                if not any(c["type"] == "Accepted" and c["status"] == "True" for c in conditions):
                    return False
            return True

        await eventually(accepted, timeout=10, what="GatewayClasses rayop and istio accepted")


async def test_up_goes_on_without_them(
    proxy: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("GOPROXY", "off")
    async with open_control_plane() as plane:
        with caplog.at_level(logging.WARNING, logger="rayop.up"):
            await install_gateway_api(plane.config)
        assert plane.cp.store.resources.get("gateway.networking.k8s.io", "v1", "gateways") is None
    (record,) = [r for r in caplog.records if r.name == "rayop.up"]
    assert "Gateway API CRDs not installed" in record.getMessage()
