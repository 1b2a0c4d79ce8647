"""Fixtures of the real-Ray tier (``pytest -m realray tests/realray``, ``scripts/test-realray``).

Every test gets an embedded control plane whose kubelet runs pods as local processes with a
real Ray (``KubeletConfig(real_ray=True)``), and rayop's operator against it. Ray comes from the
virtualenv ``scripts/test-realray`` installs (``RAYOP_RAY_ENV``, by default ``ray/2.60.0`` in
the cache root, ``RAYOP_CACHE_DIR`` or ``~/.cache/rayop``); in this tier a missing Ray fails the
test, it is never skipped.
The fast tier deselects the whole directory by its marker.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rayop.sim.nodes.kubelet import KubeletConfig
from rayop.sim.nodes.processes.ray_install import RayNotInstalled, find_ray
from rayop.testing import PlaneUnderTest, RunningOperator, open_control_plane, open_operator
from rayop.testing.operator import ALL_KINDS

DEFAULT_RAY_ENV = (
    Path(
        os.environ.get("RAYOP_CACHE_DIR")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rayop"
    )
    / "ray"
    / "2.60.0"
)  # where scripts/ray-env installs it


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks every test of this directory ``realray`` (and gives it this tier's timeout)."""
    for item in items:
        if "tests/realray/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.realray)
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(420))


@pytest.fixture(scope="session")
def ray_env() -> str:
    """The virtualenv with Ray (fails the test when there is none)."""
    env = os.environ.get("RAYOP_RAY_ENV") or str(DEFAULT_RAY_ENV)
    try:
        find_ray(env)
    except RayNotInstalled as exc:
        pytest.fail(f"{exc} (scripts/test-realray installs it)")
    return env


@pytest.fixture
async def plane(ray_env: str) -> AsyncIterator[PlaneUnderTest]:
    """An embedded plane whose pods run real Ray."""
    kubelet = KubeletConfig(real_ray=True, ray_env=ray_env, crashloop_backoff=2.0)
    async with open_control_plane(kubelet=kubelet, tls=True) as p:
        yield p


@pytest.fixture
async def operator(plane: PlaneUnderTest) -> AsyncIterator[RunningOperator]:
    """rayop's RayCluster, RayJob and RayService controllers on the plane."""
    async with open_operator(plane, controllers=ALL_KINDS) as op:
        yield op
