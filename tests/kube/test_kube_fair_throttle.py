"""The client's token bucket serves waiting requests round-robin across flows (issue 33 part 2).

A flow with a long backlog (a big worker group's creates) must not delay a flow with one request
waiting; the rate and burst stay those of the bucket; within a flow the order is kept; every
waiter is served within a bound. Virtual time (looptime) throughout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import looptime
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rayop.kube.request_flow import request_flow
from rayop.kube.throttle import TokenBucket

QPS = 100.0
SLACK = 1e-6


def run_virtual(main: Callable[[], Awaitable[None]]) -> None:
    """Runs ``main`` on a fresh event loop whose clock is virtual (looptime)."""
    loop = looptime.new_event_loop(start=0.0)
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()


@pytest.mark.looptime
async def test_one_waiting_request_is_not_held_behind_another_flows_backlog() -> None:
    loop = asyncio.get_running_loop()
    bucket = TokenBucket(QPS, 1)
    served: dict[str, float] = {}

    async def request(flow: str, label: str) -> None:
        with request_flow(flow):
            await bucket.wait()
        served[label] = loop.time()

    start = loop.time()
    big = [asyncio.create_task(request("big", f"big-{i}")) for i in range(200)]
    await asyncio.sleep(0.105)  # big's backlog is ~190 requests deep now
    await request("small", "small")
    # In call order it would wait ~1.9 s for the backlog; fairly, one token per waiting flow.
    assert served["small"] - start == pytest.approx(0.12, abs=0.011)
    await asyncio.gather(*big)
    # big loses one token's time, no more: 200 tokens plus the small one at 100/s from a burst of 1
    assert max(v for k, v in served.items() if k.startswith("big")) - start == pytest.approx(
        2.0, abs=0.011
    )


@pytest.mark.looptime
async def test_a_cancelled_waiter_leaves_no_debt_and_the_bucket_goes_idle() -> None:
    loop = asyncio.get_running_loop()
    bucket = TokenBucket(10, 1)
    await bucket.wait()
    waiters = [asyncio.create_task(bucket.wait("a")) for _ in range(5)]
    await asyncio.sleep(0)
    assert bucket.waiting == 5
    for task in waiters:
        task.cancel()
    await asyncio.gather(*waiters, return_exceptions=True)
    assert bucket.waiting == 0
    start = loop.time()
    await asyncio.sleep(1.0)
    # the tokens of the cancelled waiters were never taken: the bucket is full again
    assert await bucket.wait() == 0.0
    assert loop.time() - start == pytest.approx(1.0)


arrivals = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=4),  # flow (4: no flow)
        st.floats(min_value=0.0, max_value=0.5, allow_nan=False),  # arrival time
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=120, deadline=None)
@given(requests=arrivals, burst=st.integers(min_value=1, max_value=10))
def test_rate_order_and_bounded_wait_for_any_arrivals(
    requests: list[tuple[int, float]], burst: int
) -> None:
    arrived: dict[int, tuple[float, int, int, int]] = {}  # index -> (time, flow, rank, ahead)
    granted: dict[int, float] = {}

    async def main() -> None:
        loop = asyncio.get_running_loop()
        bucket = TokenBucket(QPS, burst)
        ranks: dict[int, int] = {}

        async def one(index: int, flow: int, at: float) -> None:
            await asyncio.sleep(at)
            rank = ranks.get(flow, 0)
            ranks[flow] = rank + 1
            ahead = sum(1 for i, a in arrived.items() if a[1] == flow and i not in granted)
            arrived[index] = (loop.time(), flow, rank, ahead)
            with request_flow(None if flow == 4 else f"flow-{flow}"):
                await bucket.wait()
            granted[index] = loop.time()

        await asyncio.gather(*(one(i, f, at) for i, (f, at) in enumerate(requests)))

    run_virtual(main)
    assert len(granted) == len(requests)
    times = sorted(granted.values())
    # the rate: never more than burst + qps * dt tokens in any window
    for i, first in enumerate(times):
        for j in range(i, len(times)):
            assert j - i + 1 <= burst + QPS * (times[j] - first) + SLACK
    # the order within a flow: a later arrival is never served before an earlier one
    for flow in range(5):
        mine = sorted((a[2], granted[i]) for i, a in arrived.items() if a[1] == flow)
        served = [t for _, t in mine]
        assert served == sorted(served)
    # no starvation: with k of its flow waiting ahead, at most (k + 1) tokens per flow
    flows = len({f for f, _ in requests})
    for index, (at, _, _, ahead) in arrived.items():
        assert granted[index] - at <= (ahead + 1) * flows / QPS + SLACK
