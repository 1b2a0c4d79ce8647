"""Fixtures of the API tests: where KubeRay's CRDs and samples live (tests/kuberay_compat.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import kuberay_compat


@pytest.fixture(scope="session")
def compat_dir() -> Path:
    """KubeRay v1.7.0's CRDs and samples; skips the test when they are absent."""
    return kuberay_compat.require()
