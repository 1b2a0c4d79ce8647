"""Fixtures for the kube client tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig
from rayop.testing import FakeClock

from .kube_fakes import FakeApiServer, start_fake_api


@pytest.fixture
async def api() -> AsyncIterator[FakeApiServer]:
    fake = await start_fake_api()
    try:
        yield fake
    finally:
        await fake.server.close()


@pytest.fixture
def clock() -> FakeClock:
    """A clock at 0 whose sleeps return at once, moving time by their length."""
    return FakeClock(0.0, autojump=True)


@pytest.fixture
async def client(api: FakeApiServer, clock: FakeClock) -> AsyncIterator[KubeClient]:
    async with KubeClient(KubeConfig.for_server(api.url, token="t0k"), qps=-1, clock=clock) as kube:
        yield kube
