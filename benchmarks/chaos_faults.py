"""The chaos campaign's fault driver: applies a seed's planned faults to the embedded plane, its
simulated Ray heads and the operator process (benchmarks/chaos.py; not a test).

It reuses the plane's own fault knobs: the API server's :class:`~rayop.sim.apiserver.faults.Faults`
(429/500 rates, latency, conflicts, watch drops and lag) and the simulated dashboards' shared
:class:`~rayop.sim.dashboard.head.DashboardFaults` (errors, delay, injected answers). Storms may
overlap: the knobs always hold the strongest setting of the storms active at the moment.

A kill SIGKILLs the operator and starts it again at once. The dead process's leader Lease is then
emptied, as a release would leave it, so that the new process need not wait out the Lease (15 s);
the takeover after a crash is tested on its own (tests/runtime/test_manager.py). A lost Lease is
the API slowed down while another holder takes the Lease; the operator must give up leadership
and exit, and is started again at once; the other holder releases the Lease when the fault ends.
A kill and a lost Lease never overlap: a kill that landed while the Lease was lost would end the
leader before it had to give up leadership, and the lost Lease would test nothing (the first
10-seed run with kills only while leading had 5 of its 10 lost Leases end that way).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from chaos_operator import OperatorProcess
from chaos_record import Record
from chaos_schedule import Fault

from rayop.kube.clock import micro_time
from rayop.sim.controlplane import EmbeddedControlPlane

__all__ = ["LEASE_NAME", "FaultDriver"]

log = logging.getLogger("chaos.faults")

LEASE_NAME = "ray-operator-leader"
"""rayop's leader Lease (KubeRay's LeaderElectionID)."""
USURPER = "chaos-usurper"
"""The other holder that takes the Lease in a lost-Lease fault."""
LEASE_EXIT_GRACE = 10.0
"""Seconds past a lost Lease's planned end that the other holder keeps it while the operator has
not given up leadership yet."""
TRIGGER_TIMEOUT = 10.0
"""Seconds an armed kill waits for its event (a pod create, a submission) before it kills anyway."""


@dataclass
class FaultDriver:
    """Applies faults; counts what it did in :attr:`done`."""

    cp: EmbeddedControlPlane
    operator: OperatorProcess
    record: Record
    lease_namespace: str
    done: Counter[str] = field(default_factory=Counter)
    _active: list[Fault] = field(default_factory=list)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _leadership: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held by a kill (from waiting for a leader to the restart) and by a lost Lease (all of it),
    so that the two never overlap."""
    stopping: bool = False
    last_fault_end: float = 0.0

    # -- kills -------------------------------------------------------------------------------

    async def kills(self, faults: list[Fault], t0: float) -> None:
        """Runs the kills one after the other: each no earlier than its planned time, once the
        operator leads (a kill during start-up would hit no work), after its planned delay."""
        for fault in faults:
            await asyncio.sleep(max(0.0, t0 + fault.at - time.monotonic()))
            async with self._leadership:
                await self.until_leading()
                await asyncio.sleep(float(fault.settings.get("after_leading", 0.0)))
                await self.kill(fault)

    def leader(self) -> str:
        """The leader Lease's holder ("" when free or absent)."""
        info = self.cp.store.resources.get("coordination.k8s.io", "v1", "leases")
        assert info is not None
        lease = self.cp.store.peek(info, self.lease_namespace, LEASE_NAME) or {}
        return str((lease.get("spec") or {}).get("holderIdentity") or "")

    async def until_leading(self) -> None:
        """Blocks while a lost Lease is on, then until the operator holds the Lease."""
        while any(f.kind == "lease-lost" for f in self._active) or self.leader() in ("", USURPER):
            await asyncio.sleep(0.05)

    async def kill(self, fault: Fault) -> None:
        """SIGKILLs the operator (now, or right after the armed event) and starts it again."""
        killed = asyncio.Event()

        def fire() -> None:
            if not killed.is_set() and self.operator.sigkill():
                killed.set()

        kind = fault.kind
        watcher: asyncio.Task[None] | None = None
        if kind == "kill-after-pod-create":
            self.record.on_pod_created.append(fire)
        elif kind == "kill-after-submit":
            watcher = asyncio.create_task(self._watch_submissions(fire, killed))
        else:
            fire()
        try:
            await asyncio.wait_for(killed.wait(), TRIGGER_TIMEOUT)
        except TimeoutError:
            kind = "kill"  # the event never came: kill now
            fire()
        finally:
            if fire in self.record.on_pod_created:
                self.record.on_pod_created.remove(fire)
            if watcher is not None:
                watcher.cancel()
        if killed.is_set():
            self.done[kind] += 1
            async with self._lock:
                await self.operator.reap()
                await self._set_lease_holder(None, only_if_not=USURPER)
                await self.operator.start()
        self._mark_end()

    async def _watch_submissions(self, fire: Callable[[], None], killed: asyncio.Event) -> None:
        seen = len(self.cp.dashboards.submissions)
        deadline = time.monotonic() + TRIGGER_TIMEOUT
        while not killed.is_set() and time.monotonic() < deadline:
            if len(self.cp.dashboards.submissions) > seen:
                fire()
                return
            await asyncio.sleep(0.005)

    async def watch_operator(self) -> None:
        """Starts the operator again whenever it exits by itself (a lost Lease)."""
        while not self.stopping:
            await asyncio.sleep(0.2)
            async with self._lock:
                code = await self.operator.exited_by_itself()
                if code is not None and not self.stopping:
                    self.done["operator-exit"] += 1
                    log.info("the operator exited with %s; starting it again", code)
                    await self.operator.start()

    # -- storms and the lost Lease ---------------------------------------------------------

    async def storm(self, fault: Fault) -> None:
        """Holds a storm's knobs for its duration."""
        self.done["storm"] += 1
        for part in fault.parts:
            self.done[f"storm:{part}"] += 1
        await self._hold(fault)

    async def lease_lost(self, fault: Fault) -> None:
        """Slows the API and hands the Lease to another holder for the fault's duration (never
        while a kill is under way)."""
        async with self._leadership:
            await self.until_leading()
            await self._lose_lease(fault)

    async def _lose_lease(self, fault: Fault) -> None:
        self.done["lease-lost"] += 1
        exits = self.done["operator-exit"]
        self._active.append(fault)
        self._apply()
        await self._set_lease_holder(USURPER)
        try:
            await asyncio.sleep(fault.duration)
            give_up = time.monotonic() + LEASE_EXIT_GRACE
            while self.done["operator-exit"] == exits and time.monotonic() < give_up:
                await asyncio.sleep(0.2)  # the renewal deadline runs out on a slow API
        finally:
            self._active.remove(fault)
            self._apply()
            await self._set_lease_holder(None, only_if=USURPER)
            if self.done["operator-exit"] > exits:
                self.done["lease-lost-exit"] += 1
            self._mark_end()

    async def _hold(self, fault: Fault) -> None:
        self._active.append(fault)
        self._apply()
        try:
            await asyncio.sleep(fault.duration)
        finally:
            self._active.remove(fault)
            self._apply()
            self._mark_end()

    def _mark_end(self) -> None:
        self.last_fault_end = time.time()

    def clear(self) -> None:
        """Ends every fault now."""
        self._active.clear()
        self._apply()

    def _apply(self) -> None:
        """Sets the plane's knobs to the strongest setting among the active faults."""
        f, d = self.cp.faults, self.cp.dashboards.faults
        f.error_429_rate = f.error_500_rate = f.conflict_rate = f.watch_delay = 0.0
        f.latency = {}
        f.watch_drop_after_events = None
        d.delay = 0.0
        d.errors.clear()
        d.answers.clear()
        latency = 0.0
        for fault in self._active:
            s, parts = fault.settings, set(fault.parts)
            if fault.kind == "lease-lost":
                latency = max(latency, float(s["latency"]))
            if "api-errors" in parts:
                f.error_429_rate = max(f.error_429_rate, float(s["error_429_rate"]))
                f.error_500_rate = max(f.error_500_rate, float(s["error_500_rate"]))
            if "api-slow" in parts:
                latency = max(latency, float(s["latency"]))
            if "api-conflicts" in parts:
                f.conflict_rate = max(f.conflict_rate, float(s["conflict_rate"]))
            if "watch-drop" in parts:
                after = int(s["watch_drop_after_events"])
                current: int | None = f.watch_drop_after_events
                f.watch_drop_after_events = after if current is None else min(current, after)
            if "watch-lag" in parts:
                f.watch_delay = max(f.watch_delay, float(s["watch_delay"]))
            if "dashboard-down" in parts:
                d.errors["*"] = 503
            if "dashboard-slow" in parts:
                d.delay = max(d.delay, float(s["dashboard_delay"]))
            if "dashboard-garbage" in parts:
                d.answers["*"] = str(s["garbage"])
        if latency:
            f.latency = {"*": (latency / 2, latency)}

    async def _set_lease_holder(
        self, holder: str | None, *, only_if: str | None = None, only_if_not: str | None = None
    ) -> None:
        """Writes the leader Lease's holder directly in the store (no API faults apply)."""
        store = self.cp.store
        info = store.resources.get("coordination.k8s.io", "v1", "leases")
        assert info is not None
        for _ in range(20):
            lease = store.peek(info, self.lease_namespace, LEASE_NAME)
            if lease is None:
                return
            spec = dict(lease.get("spec") or {})
            if only_if is not None and spec.get("holderIdentity") != only_if:
                return
            if only_if_not is not None and spec.get("holderIdentity") == only_if_not:
                return
            now = micro_time(datetime.now(UTC))
            spec.update(holderIdentity=holder or "", renewTime=now, acquireTime=now,
                        leaseDurationSeconds=15 if holder else 1)  # fmt: skip
            new = {**lease, "spec": spec}
            try:
                await store.update(info, self.lease_namespace, LEASE_NAME, new)
                return
            except Exception as exc:  # a conflict with the operator's own renewal
                if getattr(exc, "code", None) != 409:
                    raise
                await asyncio.sleep(0.01)
