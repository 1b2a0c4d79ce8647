"""Leader election on a ``coordination.k8s.io/v1`` Lease.

As client-go's ``tools/leaderelection`` (kubernetes/client-go) with controller-runtime's defaults
(``pkg/leaderelection`` in kubernetes-sigs/controller-runtime).

A candidate acquires the Lease when it is free or expired, then renews it every retry period.
Expiry is judged on the candidate's own clock: the record's timestamps are never compared
with local time; a record counts as valid until ``leaseDurationSeconds`` after this candidate
*observed* it change. If no renewal succeeds within the renew deadline, leadership is lost and
:meth:`LeaderElector.run` returns; the caller must then stop everything that needs leadership
(the manager exits the process). A graceful :meth:`LeaderElector.stop` releases the Lease
(empty holder, duration 1 s) so that another candidate can take it at once. Every wait, and the
time limit of each attempt (half the renew deadline, at least 1 s), is measured on the injected
clock; the times written into the Lease are that clock's wall time.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import random
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from rayop.kube.clock import micro_time
from rayop.kube.errors import NotFound
from rayop.kube.resources import LEASES
from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.metrics import OperatorMetrics
from rayop.runtime.timeouts import clock_timeout

log = logging.getLogger(__name__)


def default_identity() -> str:
    """Returns ``<hostname>_<uuid>``, controller-runtime's default candidate identity."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True, slots=True)
class LeaderElectionSettings:
    """Where the Lease lives and how it is timed (defaults: controller-runtime's)."""

    name: str = "controller-leader"
    """Lease name (controller-runtime's LeaderElectionID); also the metric's ``name`` label."""
    namespace: str = "default"
    """Lease namespace."""
    identity: str | None = None
    """Candidate identity; None means ``<hostname>_<uuid>``."""
    lease_duration: float = 15.0
    """Seconds a non-leader waits after last seeing the record change before taking over."""
    renew_deadline: float = 10.0
    """Seconds the leader keeps retrying a renewal before giving up leadership."""
    retry_period: float = 2.0
    """Seconds between attempts."""
    acquire_period: float | None = None
    """Seconds between attempts while another candidate holds the Lease, without jitter (how
    soon a lapsed Lease is seen, then taken); None: ``retry_period`` plus up to 1.2 times it
    of jitter, client-go's."""
    release_on_cancel: bool = True
    """Whether a graceful stop empties the Lease's holder."""
    labels: tuple[tuple[str, str], ...] = ()
    """Labels the Lease is created with (so that a set of Leases can be listed by selector)."""

    def validate(self) -> None:
        """Checks ``lease_duration > renew_deadline > 1.2 * retry_period > 0`` and
        ``0 < acquire_period <= retry_period``.

        Raises:
            ValueError: the timings are inconsistent.
        """
        if not (self.lease_duration > self.renew_deadline > 1.2 * self.retry_period > 0):
            raise ValueError("need lease_duration > renew_deadline > 1.2 * retry_period > 0")
        if self.acquire_period is not None and not 0 < self.acquire_period <= self.retry_period:
            raise ValueError("need 0 < acquire_period <= retry_period")


DEFAULT_LEADER_ELECTION = LeaderElectionSettings()
"""controller-runtime's defaults."""


class LeaseClient(Protocol):
    """The part of :class:`rayop.kube.client.KubeClient` the elector uses."""

    async def get(self, res: Any, name: str, *, namespace: str | None = None) -> dict[str, Any]: ...

    async def create(
        self, res: Any, obj: dict[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]: ...

    async def update(self, res: Any, obj: dict[str, Any]) -> dict[str, Any]: ...


Callback = Callable[[], Awaitable[None] | None]


class LeaderElector:
    """Campaigns for, holds and releases one Lease; see the module docstring."""

    def __init__(
        self,
        client: LeaseClient,
        settings: LeaderElectionSettings = DEFAULT_LEADER_ELECTION,
        *,
        metrics: OperatorMetrics | None = None,
        on_started_leading: Callback | None = None,
        on_stopped_leading: Callback | None = None,
        clock: Clock = MONOTONIC,
        rng: random.Random | None = None,
    ) -> None:
        settings.validate()
        self.settings = settings
        self.identity = settings.identity or default_identity()
        self._client = client
        self._metrics = metrics
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._clock = clock
        self._rng = rng or random.Random()
        self._lease: dict[str, Any] | None = None
        self._observed_spec: dict[str, Any] | None = None
        self._observed_time = 0.0
        self._leading = False
        self._stopping = asyncio.Event()
        self._set_metric(0)

    def is_leader(self) -> bool:
        """Tells whether this candidate currently holds the Lease."""
        return self._leading

    def _set_metric(self, value: int) -> None:
        if self._metrics is not None:
            self._metrics.leader_election_master_status.labels(name=self.settings.name).set(value)

    async def stop(self) -> None:
        """Asks :meth:`run` to return, releasing the Lease if leading; never blocks for long."""
        self._stopping.set()

    async def run(self) -> bool:
        """Blocks: acquires the Lease, renews it until lost or stopped, then returns.

        ``on_started_leading`` runs once acquired, in a task that this call owns (cancelled, if
        still running, when leadership ends); ``on_stopped_leading`` always runs at the end.

        Returns:
            True if leadership was lost (renewal failed), False after :meth:`stop` or a stop
            before leadership was ever acquired.
        """
        try:
            if not await self._acquire():
                return False
            self._leading = True
            self._set_metric(1)
            log.info("%s became leader of lease %s", self.identity, self.settings.name)
            lost = await self._lead()
            self._leading = False
            self._set_metric(0)
            if lost:
                log.error("%s: leader election lost (lease %s)", self.identity, self.settings.name)
                return True
            if self.settings.release_on_cancel:
                await self.release()
            return False
        except asyncio.CancelledError:
            if self._leading and self.settings.release_on_cancel:
                self._leading = False
                self._set_metric(0)
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.release())
            raise
        finally:
            self._leading = False
            await _call(self._on_stopped)

    async def _lead(self) -> bool:
        """Runs ``on_started_leading`` beside the renewals; returns whether leadership was lost."""
        async with asyncio.TaskGroup() as group:
            started = group.create_task(_call(self._on_started), name=f"{self.identity}: leading")
            try:
                return await self._renew_until_lost()
            finally:
                started.cancel()

    async def _acquire(self) -> bool:
        period, fixed = self.settings.retry_period, self.settings.acquire_period
        while not self._stopping.is_set():
            if await self._try_acquire_or_renew():
                return True
            wait = fixed if fixed is not None else period + self._rng.random() * 1.2 * period
            if await self._wait(wait):
                return False
        return False

    async def _renew_until_lost(self) -> bool:
        s = self.settings
        while True:
            if await self._wait(s.retry_period):
                return False
            deadline = self._clock.now() + s.renew_deadline
            # The deadline holds even while an attempt hangs (a partition that drops packets):
            # checked only between attempts, it would stretch by an attempt's own timeout, up
            # to the Lease duration, when others may already take over.
            try:
                async with clock_timeout(self._clock, s.renew_deadline) as scope:
                    while not await self._try_acquire_or_renew():
                        if self._clock.now() + s.retry_period > deadline:
                            return True
                        if await self._wait(s.retry_period):
                            return False
            except TimeoutError:
                if scope.expired():
                    return True
                raise

    async def _wait(self, seconds: float) -> bool:
        """Sleeps ``seconds`` on the clock; returns True early if stop() was called."""
        if not self._stopping.is_set():
            with contextlib.suppress(TimeoutError):
                async with clock_timeout(self._clock, seconds):
                    await self._stopping.wait()
        return self._stopping.is_set()

    def _observe(self, spec: dict[str, Any]) -> None:
        if spec != self._observed_spec:
            self._observed_spec = dict(spec)
            self._observed_time = self._clock.now()

    def _observed_valid(self) -> bool:
        spec = self._observed_spec or {}
        duration = float(spec.get("leaseDurationSeconds") or 0)
        return self._observed_time + duration > self._clock.now()

    async def _try_acquire_or_renew(self) -> bool:
        try:
            async with clock_timeout(self._clock, max(self.settings.renew_deadline / 2, 1.0)):
                return await self._attempt()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.info("%s: lease %s attempt failed: %r", self.identity, self.settings.name, exc)
            return False

    async def _attempt(self) -> bool:
        s = self.settings
        now = micro_time(self._clock.wall())
        holder_is_me = (self._observed_spec or {}).get("holderIdentity") == self.identity
        if self._lease is not None and holder_is_me and self._observed_valid():
            lease = _with_spec(self._lease, {**self._lease.get("spec", {}), "renewTime": now})
            try:
                self._record(await self._client.update(LEASES, lease))
                return True
            except Exception as exc:
                log.debug("%s: fast renew failed: %r", self.identity, exc)
        try:
            current = await self._client.get(LEASES, s.name, namespace=s.namespace)
        except NotFound:
            spec = self._new_spec(now, transitions=0)
            lease = {
                "apiVersion": LEASES.api_version,
                "kind": LEASES.kind,
                "metadata": {"name": s.name, "namespace": s.namespace, **_labels(s)},
                "spec": spec,
            }
            self._record(await self._client.create(LEASES, lease, namespace=s.namespace))
            return True
        spec = dict(current.get("spec") or {})
        self._observe(spec)
        holder = spec.get("holderIdentity") or ""
        if holder and holder != self.identity and self._observed_valid():
            return False
        if holder == self.identity:
            new_spec = {**spec, **self._new_spec(now, transitions=spec.get("leaseTransitions", 0))}
            new_spec["acquireTime"] = spec.get("acquireTime") or now
        else:
            transitions = int(spec.get("leaseTransitions") or 0) + 1
            new_spec = {**spec, **self._new_spec(now, transitions=transitions)}
        self._record(await self._client.update(LEASES, _with_spec(current, new_spec)))
        return True

    def _new_spec(self, now: str, *, transitions: int) -> dict[str, Any]:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.settings.lease_duration),
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    def _record(self, lease: dict[str, Any]) -> None:
        self._lease = lease
        self._observe(dict(lease.get("spec") or {}))

    async def release(self) -> bool:
        """Empties the Lease's holder if this candidate holds it; returns whether it did."""
        lease = self._lease
        if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
            return False
        now = micro_time(self._clock.wall())
        spec = {
            **lease.get("spec", {}),
            "holderIdentity": "",
            "leaseDurationSeconds": 1,
            "acquireTime": now,
            "renewTime": now,
        }
        try:
            self._record(await self._client.update(LEASES, _with_spec(lease, spec)))
        except Exception as exc:
            log.warning(
                "%s: failed to release lease %s: %r", self.identity, self.settings.name, exc
            )
            return False
        log.info("%s released lease %s", self.identity, self.settings.name)
        return True


def _labels(settings: LeaderElectionSettings) -> dict[str, dict[str, str]]:
    return {"labels": dict(settings.labels)} if settings.labels else {}


def _with_spec(lease: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    return {**lease, "metadata": dict(lease.get("metadata") or {}), "spec": spec}


async def _call(callback: Callback | None) -> None:
    if callback is None:
        return
    try:
        result = callback()
        if inspect.isawaitable(result):
            await result
    except Exception:
        log.exception("leader election callback failed")
