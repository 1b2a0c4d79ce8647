"""End-to-end fixtures: a control plane with CRDs and rayop's RayCluster operator."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from .raycluster_env import OperatorEnv, running_operator


@pytest.fixture
async def env() -> AsyncIterator[OperatorEnv]:
    """A control plane with the RayCluster operator (concurrency 4)."""
    async with running_operator() as running:
        yield running
