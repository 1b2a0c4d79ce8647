"""The Gateway API CRDs (standard channel) that ``rayop up`` installs on the embedded plane.

They are ``config/crd/standard/*.yaml`` of the Go module ``sigs.k8s.io/gateway-api`` at the
version KubeRay v1.7.0's go.mod names (v1.4.1; ``RAYOP_GATEWAY_API_VERSION`` overrides it), kept
where ``scripts/gateway-api-crds`` keeps them::

    ~/.cache/rayop/gateway-api/<version>/crds/*.yaml       (RAYOP_CACHE_DIR, XDG_CACHE_HOME)
    ~/.cache/rayop/gateway-api/<version>/.gateway-api.version

:func:`load_crds` reads them from there and, when they are not cached, downloads the module's
zip from the Go module proxy (the first URL of ``GOPROXY``, https://proxy.golang.org by
default) and caches the CRDs, as the script does with ``go mod download``. The repository holds
no copy of them.
"""

from __future__ import annotations

import io
import os
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

import yaml

MODULE = "sigs.k8s.io/gateway-api"
DEFAULT_VERSION = "v1.4.1"
DEFAULT_PROXY = "https://proxy.golang.org"
STAMP = ".gateway-api.version"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader when PyYAML has it: ten times the pure-Python one on these 700 KB."""
CRD_DIR = "config/crd/standard/"

Obj = dict[str, Any]


class CrdsUnavailable(RuntimeError):
    """The CRDs are neither cached nor downloadable."""


def version() -> str:
    """Returns the Gateway API version to install."""
    return os.environ.get("RAYOP_GATEWAY_API_VERSION") or DEFAULT_VERSION


def cache_dir(ver: str | None = None) -> Path:
    """Returns ``<cache>/gateway-api/<version>``."""
    root = os.environ.get("RAYOP_CACHE_DIR") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rayop"
    )
    return Path(root) / "gateway-api" / (ver or version())


def _proxy() -> str:
    for entry in (os.environ.get("GOPROXY") or DEFAULT_PROXY).replace("|", ",").split(","):
        if "://" in entry:
            return entry.rstrip("/")
    raise CrdsUnavailable("GOPROXY names no module proxy URL")


def fetch(ver: str | None = None, *, timeout: float = 20.0) -> Path:
    """Downloads the module zip from the proxy and caches the CRDs; returns the cache directory.

    Raises:
        CrdsUnavailable: the download failed or the zip holds no CRDs.
    """
    ver = ver or version()
    url = f"{_proxy()}/{MODULE}/@v/{ver}.zip"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            payload = response.read()
        archive = zipfile.ZipFile(io.BytesIO(payload))
    except (OSError, zipfile.BadZipFile) as exc:
        raise CrdsUnavailable(f"cannot download {url}: {exc}") from exc
    prefix = f"{MODULE}@{ver}/{CRD_DIR}"
    members = [
        n
        for n in archive.namelist()
        if n.startswith(prefix) and n.endswith(".yaml") and "/" not in n[len(prefix) :]
    ]
    if not members:
        raise CrdsUnavailable(f"{url} holds no {CRD_DIR}*.yaml")
    out = cache_dir(ver)
    crds = out / "crds"
    crds.mkdir(parents=True, exist_ok=True)
    for old in crds.glob("*.yaml"):
        old.unlink()
    for name in members:
        (crds / name[len(prefix) :]).write_bytes(archive.read(name))
    (out / STAMP).write_text(f"{ver}\n")
    return out


def load_crds(*, download: bool = True) -> list[Obj]:
    """Returns the CRD documents, from the cache or (``download``) fetched into it first.

    Raises:
        CrdsUnavailable: not cached, and not downloadable (or ``download`` is False).
    """
    ver = version()
    out = cache_dir(ver)
    stamp = out / STAMP
    if not (stamp.is_file() and stamp.read_text().strip() == ver):
        if not download:
            raise CrdsUnavailable(f"the Gateway API CRDs {ver} are not cached in {out}")
        fetch(ver)
    docs: list[Obj] = []
    for path in sorted((out / "crds").glob("*.yaml")):
        docs.extend(d for d in yaml.load_all(path.read_text(), Loader=_LOADER) if d)
    if not docs:
        raise CrdsUnavailable(f"no CRDs in {out / 'crds'}")
    return docs
