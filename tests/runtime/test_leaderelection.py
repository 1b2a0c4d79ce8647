"""Leader election over an in-memory Lease API, in virtual time (controller-machinery.md §8)."""

from __future__ import annotations

import asyncio
import dataclasses
import random

import pytest

from rayop.runtime.leaderelection import LeaderElectionSettings, LeaderElector
from rayop.runtime.metrics import OperatorMetrics
from rayop.testing import eventually

from .informer_fakes import FakeLeases

DEFAULTS = LeaderElectionSettings(namespace="ops")


def status(metrics: OperatorMetrics, name: str = "controller-leader") -> float | None:
    return metrics.registry.get_sample_value("leader_election_master_status", {"name": name})


class Candidate:
    def __init__(self, api: FakeLeases, who: str, settings: LeaderElectionSettings = DEFAULTS) -> None:
        self.metrics = OperatorMetrics()
        self.started_at: float | None = None
        self.stopped_at: float | None = None
        loop = asyncio.get_running_loop()

        def started() -> None:
            self.started_at = loop.time()

        def stopped() -> None:
            self.stopped_at = loop.time()

        self.elector = LeaderElector(
            api.client(who),
            dataclasses.replace(settings, identity=who),
            metrics=self.metrics,
            on_started_leading=started,
            on_stopped_leading=stopped,
            rng=random.Random(who),
        )
        self.task = loop.create_task(self.elector.run())


@pytest.mark.looptime
async def test_acquires_renews_and_releases_on_stop() -> None:
    api = FakeLeases()
    a = Candidate(api, "a")
    assert status(a.metrics) == 0
    await eventually(a.elector.is_leader, timeout=60)
    assert status(a.metrics) == 1
    spec = api.leases["ops/controller-leader"]["spec"]
    assert spec["holderIdentity"] == "a" and spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    await asyncio.sleep(10)
    renewals = [w for who, w in api.writes if who == "a"]
    assert 4 <= len(renewals) <= 7  # one write every 2 s retry period
    await a.elector.stop()
    assert await a.task is False
    spec = api.leases["ops/controller-leader"]["spec"]
    assert spec["holderIdentity"] == "" and spec["leaseDurationSeconds"] == 1
    assert status(a.metrics) == 0
    assert a.stopped_at is not None


@pytest.mark.looptime
async def test_exactly_one_leads_and_a_partitioned_leader_steps_down_before_takeover() -> None:
    api = FakeLeases()
    a = Candidate(api, "a")
    await eventually(a.elector.is_leader, timeout=60)
    b = Candidate(api, "b")
    await asyncio.sleep(30)
    assert a.elector.is_leader() and not b.elector.is_leader()
    assert status(b.metrics) == 0
    loop = asyncio.get_running_loop()
    cut = loop.time()
    api.down.add("a")  # the leader can no longer renew
    assert await a.task is True  # run() reports leadership lost
    lost_at = loop.time()
    assert status(a.metrics) == 0
    await eventually(b.elector.is_leader, timeout=60)
    assert b.started_at is not None
    # a gives up within renew deadline + retry; b takes over only after the lease has expired
    # on its own clock (15 s after it last saw the record change), so never both at once.
    assert lost_at - cut <= 10 + 2 + 0.1
    assert lost_at < b.started_at <= cut + 15 + 4.4 + 0.1
    assert api.leases["ops/controller-leader"]["spec"]["leaseTransitions"] == 1
    await b.elector.stop()
    await b.task


@pytest.mark.looptime
async def test_a_leader_whose_renewals_hang_gives_up_at_the_renew_deadline() -> None:
    """Requests that never answer (a partition that drops packets) must not stretch the
    renew deadline by an attempt's own timeout: the leader gives up within retry period plus
    renew deadline of its last renewal, as client-go does, well before the Lease (15 s) can
    lapse on another replica's clock."""
    api = FakeLeases()
    a = Candidate(api, "a")
    await eventually(a.elector.is_leader, timeout=60)
    await asyncio.sleep(7)
    loop = asyncio.get_running_loop()
    renewed = api.leases["ops/controller-leader"]["spec"]["renewTime"]
    api.hung.add("a")
    cut = loop.time()
    assert await a.task is True
    lost_at = loop.time()
    assert api.leases["ops/controller-leader"]["spec"]["renewTime"] == renewed
    assert lost_at - cut <= 2 + 10 + 0.1, lost_at - cut


@pytest.mark.looptime
async def test_a_released_lease_is_taken_at_once() -> None:
    api = FakeLeases()
    a = Candidate(api, "a")
    await eventually(a.elector.is_leader, timeout=60)
    b = Candidate(api, "b")
    await asyncio.sleep(5)
    loop = asyncio.get_running_loop()
    released = loop.time()
    await a.elector.stop()
    await a.task
    await eventually(b.elector.is_leader, timeout=60)
    assert b.started_at is not None and b.started_at - released <= 4.4 + 0.1
    await b.elector.stop()
    await b.task


def test_settings_are_validated() -> None:
    with pytest.raises(ValueError):
        LeaderElectionSettings(lease_duration=10, renew_deadline=10).validate()
    with pytest.raises(ValueError):
        LeaderElectionSettings(renew_deadline=2, retry_period=2).validate()
    LeaderElectionSettings().validate()


@pytest.mark.looptime
async def test_an_acquire_period_takes_a_lapsed_lease_within_it_of_the_lapse() -> None:
    """With ``acquire_period`` a waiting candidate reads the Lease that often, without jitter: it
    sees the last renewal within that period and takes the Lease within that period of its
    lapse (the Lease duration plus one or two periods after the leader's last renewal), where
    client-go's jittered retry allows up to 15 + 2 * 4.4 s."""
    fast = dataclasses.replace(DEFAULTS, acquire_period=0.5)
    api = FakeLeases()
    a = Candidate(api, "a", fast)
    await eventually(a.elector.is_leader, timeout=60)
    b = Candidate(api, "b", fast)
    await asyncio.sleep(9)
    loop = asyncio.get_running_loop()
    api.down.add("a")
    cut = loop.time()
    await a.task
    await eventually(b.elector.is_leader, timeout=60)
    assert b.started_at is not None
    assert cut + 15 - 2 <= b.started_at <= cut + 15 + 0.5 + 0.5 + 0.1, b.started_at - cut
    await b.elector.stop()
    await b.task


def test_an_acquire_period_is_validated() -> None:
    for bad in (0.0, -1.0, 2.5):
        with pytest.raises(ValueError, match="acquire_period"):
            LeaderElectionSettings(acquire_period=bad).validate()
    LeaderElectionSettings(acquire_period=2.0).validate()
