"""Fault injection over HTTP: 429 + Retry-After, 500, injected conflicts, in-flight cap, latency,
service slots."""

from __future__ import annotations

import asyncio

import pytest

from rayop.sim.apiserver.faults import FaultInjector, Faults

from .server_harness import POD, open_harness, pod


async def test_injected_429_and_500_are_statuses() -> None:
    async with open_harness() as h:
        h.faults.error_429_rate = 1.0
        h.faults.retry_after_seconds = 7
        async with h.client.get(POD, headers={"Authorization": "Bearer test-token"}) as r:
            body = await r.json()
            assert r.status == 429 and r.headers["Retry-After"] == "7"
        assert body["reason"] == "TooManyRequests" and body["details"]["retryAfterSeconds"] == 7
        h.faults.error_429_rate = 0.0
        h.faults.error_500_rate = 1.0
        code, body = await h.call("GET", POD)
        assert code == 500 and body["reason"] == "InternalError"
        h.faults.error_500_rate = 0.0
        code, _ = await h.call("GET", "/api/v1")
        assert code == 200
        assert h.audit.count(code=429) == 1 and h.audit.count(code=500) == 1


async def test_conflict_rate_hits_updates_and_patches_only() -> None:
    async with open_harness() as h:
        _, p = await h.call("POST", POD, pod("a"))
        h.faults.conflict_rate = 1.0
        code, err = await h.call("PUT", POD + "/a", p)
        assert code == 409 and err["reason"] == "Conflict"
        code, _ = await h.call("PATCH", POD + "/a", {}, ctype="application/merge-patch+json")
        assert code == 409
        code, _ = await h.call("POST", POD, pod("b"))
        assert code == 201
        h.faults.conflict_rate = 0.0
        code, _ = await h.call("PUT", POD + "/a", p)
        assert code == 200


async def test_max_in_flight_and_latency() -> None:
    async with open_harness() as h:
        h.faults.latency = {"get": (0.2, 0.0)}
        h.faults.max_in_flight = 2
        loop = asyncio.get_running_loop()
        await h.call("POST", POD, pod("a"))
        t0 = loop.time()
        results = await asyncio.gather(*(h.call("GET", POD + "/a") for _ in range(4)))
        codes = sorted(c for c, _ in results)
        assert codes == [200, 200, 429, 429]
        assert loop.time() - t0 >= 0.2
        h.faults.max_in_flight = None
        h.faults.latency = {}
        code, _ = await h.call("GET", POD + "/a")
        assert code == 200


@pytest.mark.looptime
async def test_service_slots_queue_the_added_latency() -> None:
    """Three requests on one slot take three latencies; on three slots, one; unset, one."""
    injector = FaultInjector(Faults(service_slots=1))

    async def request() -> None:
        async with injector.service_slot():
            await asyncio.sleep(0.1)

    loop = asyncio.get_running_loop()
    for slots, took in ((1, 0.3), (3, 0.1), (None, 0.1)):
        injector.faults.service_slots = slots
        t0 = loop.time()
        await asyncio.gather(*(request() for _ in range(3)))
        assert loop.time() - t0 == pytest.approx(took)
