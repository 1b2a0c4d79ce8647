"""A public test kit for code built on rayop: a virtual clock, an in-memory source, waiting
helpers, a fake world for unit tests of a pass (a fake API client, a fake informer cache, a
recording event sink), the embedded control plane with rayop's CRDs, and rayop's operator
running on it.

The kit is part of rayop's API (the project's own tests use it): import from here, not from the
submodules. Pytest fixtures for the same come with :mod:`rayop.testing.pytest_plugin`.

The clock, the source, the waiting helpers and the fake world import only ``rayop.kube`` and
``rayop.runtime``;
the plane and the operator (``rayop.sim``, ``rayop.controllers``) are imported on first use, so
a unit test of the machinery does not load the controllers.

Usage::

    from rayop.testing import eventually, open_control_plane, open_operator

    async def test_cluster_becomes_ready() -> None:
        async with open_control_plane() as plane, open_operator(plane):
            await plane.create(RAY_CLUSTERS, raycluster, "demo")
            await eventually(lambda: plane.raycluster_converged("demo", "sample"), timeout=30)

Modules and subpackages:

- ``clock``: a clock for tests whose time moves only when the test (or, with autojump, a sleeper)
  says so.
- ``control_plane``: the embedded control plane for tests: started in-process, rayop's CRDs
  installed, a user client.
- ``fake_cache``: :class:`FakeCache`, an informer cache's read side over objects a test puts in it.
- ``fake_client``: :class:`FakeClient`, an in-memory API client that answers as a server would.
- ``gateway_api``: a stand-in for a Gateway API implementation, for tests of
  NewClusterWithIncrementalUpgrade.
- ``operator``: rayop's operator for tests: a manager running chosen Ray controllers against any API
  server.
- ``pytest_plugin``: pytest fixtures of the test kit: a fake clock, the embedded control plane,
  rayop's operator.
- ``recording_events``: :class:`RecordingEventSink`, an event sink that keeps every event.
- ``readiness``: readiness checks on plain objects: is a pod Running and Ready, is a RayCluster
  converged.
- ``sources``: a public test kit for code built on the controller machinery.
- ``waiting``: waiting in tests: until a condition holds, or until the event loop has nothing left
  to run.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rayop.testing.clock import WALL_START, FakeClock
from rayop.testing.fake_cache import FakeCache
from rayop.testing.fake_client import Call, FakeClient, api_error
from rayop.testing.recording_events import RecordedEvent, RecordingEventSink
from rayop.testing.sources import InMemorySource
from rayop.testing.waiting import eventually, settle

if TYPE_CHECKING:
    from rayop.testing.control_plane import (
        FAST_KUBELET,
        PlaneUnderTest,
        install_crds,
        open_control_plane,
        plane_config,
    )
    from rayop.testing.gateway_api import GatewayProgrammer, install_gateway_api_crds
    from rayop.testing.operator import ALL_KINDS, Kind, RunningOperator, open_operator
    from rayop.testing.readiness import ray_node_pods, raycluster_converged, running_and_ready

_LAZY = {
    "FAST_KUBELET": "control_plane",
    "PlaneUnderTest": "control_plane",
    "install_crds": "control_plane",
    "open_control_plane": "control_plane",
    "plane_config": "control_plane",
    "ALL_KINDS": "operator",
    "Kind": "operator",
    "RunningOperator": "operator",
    "open_operator": "operator",
    "ray_node_pods": "readiness",
    "raycluster_converged": "readiness",
    "running_and_ready": "readiness",
    "GatewayProgrammer": "gateway_api",
    "install_gateway_api_crds": "gateway_api",
}
"""Names imported on first use -> the submodule that defines them."""

__all__ = [
    "ALL_KINDS",
    "FAST_KUBELET",
    "WALL_START",
    "Call",
    "FakeCache",
    "FakeClient",
    "FakeClock",
    "GatewayProgrammer",
    "InMemorySource",
    "Kind",
    "PlaneUnderTest",
    "RecordedEvent",
    "RecordingEventSink",
    "RunningOperator",
    "api_error",
    "eventually",
    "install_crds",
    "install_gateway_api_crds",
    "open_control_plane",
    "open_operator",
    "plane_config",
    "ray_node_pods",
    "raycluster_converged",
    "running_and_ready",
    "settle",
]


def __getattr__(name: str) -> Any:
    """Imports a plane or operator name from its submodule the first time it is asked for."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
