"""Fixtures of the API tests: where KubeRay's CRDs and samples live (../shared beside the repo)."""

from __future__ import annotations

from pathlib import Path

import pytest

COMPAT = Path(__file__).resolve().parents[2].parent / "shared" / "compat" / "kuberay-v1.7.0"


@pytest.fixture(scope="session")
def compat_dir() -> Path:
    """KubeRay v1.7.0's CRDs and samples; skips the test when ../shared is absent."""
    if not COMPAT.is_dir():
        pytest.skip(f"KubeRay compatibility data not found at {COMPAT} (../shared is absent)")
    return COMPAT
