"""Pytest fixtures of the test kit: a fake clock, the embedded control plane, rayop's operator.

Enable it in a ``conftest.py`` at the root of the tests (pytest needs pytest-asyncio)::

    pytest_plugins = ["rayop.testing.pytest_plugin"]

Fixtures (each test gets its own; a test's own fixture of the same name wins):

- ``fake_clock``: a :class:`~rayop.testing.FakeClock`.
- ``control_plane``: a :class:`~rayop.testing.PlaneUnderTest` from
  :func:`~rayop.testing.open_control_plane` (fast kubelet, CRDs installed).
- ``ray_operator``: a :class:`~rayop.testing.RunningOperator` from
  :func:`~rayop.testing.open_operator` on ``control_plane``. Mark the test with
  ``@pytest.mark.rayop_operator(**kwargs)`` to choose what runs: the keyword arguments go to
  ``open_operator``, e.g. ``controllers=ALL_KINDS, concurrency=1``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

from rayop.testing.clock import FakeClock

if TYPE_CHECKING:
    from rayop.testing.control_plane import PlaneUnderTest
    from rayop.testing.operator import RunningOperator

OPERATOR_MARK = "rayop_operator"
"""The marker whose keyword arguments configure the ``ray_operator`` fixture."""


def pytest_configure(config: pytest.Config) -> None:
    """Registers the ``rayop_operator`` marker (so ``--strict-markers`` accepts it)."""
    config.addinivalue_line(
        "markers", f"{OPERATOR_MARK}(**kwargs): arguments of open_operator for ray_operator"
    )


@pytest.fixture
def fake_clock() -> FakeClock:
    """A fake clock at its default start, time moving only when the test steps it."""
    return FakeClock()


@pytest_asyncio.fixture
async def control_plane() -> AsyncIterator[PlaneUnderTest]:
    """An embedded control plane with rayop's CRDs and a user client; stopped after the test."""
    from rayop.testing.control_plane import open_control_plane  # the plane only when used

    async with open_control_plane() as plane:
        yield plane


@pytest_asyncio.fixture
async def ray_operator(
    request: pytest.FixtureRequest, control_plane: PlaneUnderTest
) -> AsyncIterator[RunningOperator]:
    """rayop's operator (the RayCluster controller unless marked) on ``control_plane``."""
    from rayop.testing.operator import open_operator  # the controllers only when used

    marker = request.node.get_closest_marker(OPERATOR_MARK)
    kwargs: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    async with open_operator(control_plane, **kwargs) as running:
        yield running
