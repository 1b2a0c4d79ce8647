"""Rate limiter formulas (controller-machinery.md §1.4)."""

from __future__ import annotations

import pytest

from rayop.runtime.queues.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    default_controller_rate_limiter,
)
from rayop.testing.clock import FakeClock


def nth_delay(limiter: ItemExponentialFailureRateLimiter, item: str, k: int) -> float:
    delay = 0.0
    for _ in range(k):
        delay = limiter.when(item)
    return delay


@pytest.mark.parametrize(
    ("k", "expected"),
    [(1, 0.005), (2, 0.01), (10, 2.56), (15, 81.92), (18, 655.36), (19, 1000.0), (40, 1000.0)],
)
def test_exponential_kth_failure(k: int, expected: float) -> None:
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    assert nth_delay(limiter, "a", k) == pytest.approx(expected)
    assert limiter.num_requeues("a") == k


def test_exponential_is_per_item_and_forget_resets() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.001, 1.0)
    assert [limiter.when("a") for _ in range(3)] == [0.001, 0.002, 0.004]
    assert limiter.when("b") == 0.001
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 0.001
    assert limiter.num_requeues("b") == 1


def test_exponential_does_not_overflow() -> None:
    limiter = ItemExponentialFailureRateLimiter(1.0, 50.0)
    assert nth_delay(limiter, "a", 5000) == 50.0


def test_bucket_burst_then_spaced_reservations() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(10.0, 100, clock=clock)
    assert [limiter.when(i) for i in range(100)] == [0.0] * 100
    assert limiter.when("x") == pytest.approx(0.1)
    assert limiter.when("y") == pytest.approx(0.2)
    assert limiter.when("z") == pytest.approx(0.3)
    assert limiter.num_requeues("x") == 0


def test_bucket_refills_at_qps_and_caps_at_burst() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(10.0, 2, clock=clock)
    assert limiter.when("a") == 0.0
    assert limiter.when("a") == 0.0
    assert limiter.when("a") == pytest.approx(0.1)  # balance -1
    clock.step(0.1)  # balance back to 0
    assert limiter.when("a") == pytest.approx(0.1)
    clock.step(100.0)  # refill caps at the burst
    assert [limiter.when("a") for _ in range(3)] == pytest.approx([0.0, 0.0, 0.1])


def test_max_of_calls_every_child_and_returns_maximum() -> None:
    clock = FakeClock()
    exponential = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    bucket = BucketRateLimiter(10.0, 1, clock=clock)
    limiter = MaxOfRateLimiter(exponential, bucket)
    assert limiter.when("a") == 0.005  # bucket token free
    assert limiter.when("a") == pytest.approx(0.1)  # bucket wins, exponential still counted
    assert exponential.num_requeues("a") == 2
    assert limiter.num_requeues("a") == 2
    limiter.forget("a")
    assert exponential.num_requeues("a") == 0


def test_fast_slow() -> None:
    limiter = ItemFastSlowRateLimiter(0.1, 5.0, 2)
    assert [limiter.when("a") for _ in range(4)] == [0.1, 0.1, 5.0, 5.0]
    assert limiter.num_requeues("a") == 4
    limiter.forget("a")
    assert limiter.when("a") == 0.1


def test_default_classic_limiter_has_global_bucket() -> None:
    clock = FakeClock()
    limiter = default_controller_rate_limiter(False, clock=clock)
    delays = [limiter.when(i) for i in range(101)]
    assert delays[:100] == [0.005] * 100
    assert delays[100] == pytest.approx(0.1)
    assert limiter.when(200) == pytest.approx(0.2)


def test_default_priority_limiter_is_exponential_only() -> None:
    limiter = default_controller_rate_limiter(True)
    delays = [limiter.when(i) for i in range(500)]
    assert delays == [0.005] * 500
    assert [limiter.when("k") for _ in range(10)][-1] == pytest.approx(2.56)
