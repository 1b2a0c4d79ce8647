"""Where KubeRay v1.7.0's compatibility material is, and the skip when it is not there.

The material (KubeRay's samples, CRDs, Helm chart and source archive) lives in the developers'
shared folder beside the checkout (``<repo>/../shared``; ``RAYOP_SHARED_DIR`` names another) and is
never copied into the repository. A clone without it still passes the fast tier: every test that
needs the material skips with :data:`MISSING`, one line saying how to enable it. Under
``RAYOP_REQUIRE_BUILDS=1`` (tests/conftest.py) such a skip is a failure.

Every test reads the material through this module (tests/test_kuberay_compat.py checks that no
other test file spells its path), and nothing here reads it at import time, so collection never
fails on a bare clone:

* :func:`samples_dir`, :func:`crds_dir`, :func:`helm_chart_dir`, :func:`sample_docs` and
  :func:`source_sample` skip the calling test when the material is absent;
* :data:`needs_material` marks a test or module that needs it;
* :func:`names_or_skip` lists what a ``parametrize`` runs over, or one parameter that skips, and
  :func:`sample_names` a module-level list in a module marked :data:`needs_material`.
"""

from __future__ import annotations

import os
import tarfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

KUBERAY_VERSION = "v1.7.0"
SHARED_DIR_ENV = "RAYOP_SHARED_DIR"
MISSING = (
    f"needs KubeRay {KUBERAY_VERSION}'s compat material: put the shared/ folder beside the clone "
    f"or set {SHARED_DIR_ENV}"
)
"""The one-line reason of every skip for want of the material."""
SOURCE_ARCHIVE = "ray-operator-src.tar.gz"
SOURCE_SAMPLES = "ray-operator/config/samples"
"""Where the source archive keeps the samples the ``samples`` directory lacks (RayCronJob's,
embedded GCS fault tolerance, incremental upgrade)."""
REPO = Path(__file__).resolve().parents[1]

Obj = dict[str, Any]


def shared_dir() -> Path:
    """The shared folder: ``$RAYOP_SHARED_DIR``, else ``shared`` beside the checkout."""
    configured = os.environ.get(SHARED_DIR_ENV)
    return Path(configured) if configured else REPO.parent / "shared"


def compat_dir() -> Path:
    """KubeRay v1.7.0's material in the shared folder (it may not exist)."""
    return shared_dir() / "compat" / f"kuberay-{KUBERAY_VERSION}"


def present() -> bool:
    """Tells whether the material is here."""
    return compat_dir().is_dir()


def require() -> Path:
    """Returns :func:`compat_dir`; skips the calling test with :data:`MISSING` when it is absent.

    A file missing from material that is present is not skipped: the test using it fails.
    """
    if not present():
        pytest.skip(MISSING)
    return compat_dir()


def samples_dir() -> Path:
    """KubeRay's sample manifests (``config/samples`` as the release ships them)."""
    return require() / "samples"


def crds_dir() -> Path:
    """KubeRay's CRDs (``ray.io_<plural>.yaml``)."""
    return require() / "crds"


def helm_chart_dir() -> Path:
    """KubeRay's operator Helm chart."""
    return require() / "helm-chart" / "kuberay-operator"


def sample_docs(file_name: str) -> list[Obj]:
    """The non-empty YAML documents of one sample file."""
    with (samples_dir() / file_name).open() as f:
        return [d for d in yaml.safe_load_all(f) if d]


def source_sample(file_name: str) -> list[Obj]:
    """The non-empty YAML documents of a sample read from KubeRay's source archive."""
    with tarfile.open(require() / SOURCE_ARCHIVE) as archive:
        member = archive.extractfile(f"{SOURCE_SAMPLES}/{file_name}")
        assert member is not None, file_name
        return [d for d in yaml.safe_load_all(member.read()) if d]


needs_material: pytest.MarkDecorator = pytest.mark.skipif(not present(), reason=MISSING)
"""Skips a test (or, as ``pytestmark``, a module) when the material is absent."""


def sample_names(names: Callable[[], Iterable[str]]) -> list[str]:
    """``names()`` when the material is here, else no names: a module-level list of samples in a
    module marked :data:`needs_material` (whose tests then skip with :data:`MISSING`).

    Called at collection, so it never skips by itself.
    """
    return list(names()) if present() else []


def names_or_skip(names: Callable[[], Iterable[str]]) -> list[Any]:
    """What a ``parametrize`` over samples runs: ``names()`` when the material is here, else one
    parameter (id ``no-compat-material``) that skips with :data:`MISSING`.

    Called at collection, so it never skips by itself.
    """
    if not present():
        return [pytest.param("", marks=pytest.mark.skip(reason=MISSING), id="no-compat-material")]
    return sample_names(names)
