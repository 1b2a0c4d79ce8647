"""``rayop preview``'s run: the operator's first pass over each live ray.io object, with every
write withheld.

:func:`first_passes` runs the operator (:func:`~rayop.controllers.assembly.build.build_operator`,
with the settings the command line built) against a live cluster through a
:class:`~rayop.preview.recording_client.RecordingClient` that reads from the cluster and records
each write instead of sending it; its events go to another such client. Each controller
reconciles each object once (:class:`PassLimiter`): later passes, and passes over objects not
asked about, return at once without running. Dashboards are reached through the API server's
services proxy, so that what a pass would send a Ray dashboard (a job submission, a Serve
config) is a withheld write too. It needs only read access (and ``services/proxy`` GETs for the
dashboards).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

from rayop.controllers.assembly.build import build_operator
from rayop.controllers.assembly.catalog import CATALOG, KINDS
from rayop.controllers.assembly.operator_settings import OperatorSettings
from rayop.kube.config import KubeConfig
from rayop.preview.recording_client import Overlay, RecordingClient, Write
from rayop.runtime.metrics import OperatorMetrics
from rayop.runtime.reconcile import Request, Result, current_controller

__all__ = ["PRIMARY", "FirstPasses", "PassLimiter", "PassOutcome", "first_passes"]

Obj = dict[str, Any]
Reconcile = Callable[[Request], Awaitable[Result]]

PRIMARY: Final[dict[str, str]] = {b.kind: b.name for b in CATALOG if not b.secondary}
"""The primary controller's name of each kind."""
QUIET_SECONDS: Final = 0.5
"""How long no pass may run before the passes are taken as complete."""
_POLL_SECONDS = 0.05


@dataclass(frozen=True, slots=True)
class PassOutcome:
    """How one first pass ended.

    Attributes:
        result: What it returned (None when it raised).
        error: What it raised, as text ("" when it returned).
    """

    result: Result | None
    error: str = ""


@dataclass
class PassLimiter:
    """Lets each controller reconcile each of ``requests`` once; every other pass returns
    ``Result()`` at once. A pass that raises is recorded, not retried."""

    requests: frozenset[Request]
    outcomes: dict[tuple[str, Request], PassOutcome] = field(default_factory=dict)
    running: int = 0
    last_end: float = 0.0

    def wrap(self, reconcile: Reconcile) -> Reconcile:
        """Returns ``reconcile`` limited to first passes (a ``wrap_reconcile`` of
        :func:`~rayop.controllers.assembly.build.build_operator`)."""

        async def first_only(request: Request) -> Result:
            key = (current_controller.get() or "", request)
            if request not in self.requests or key in self.outcomes:
                return Result()
            self.outcomes[key] = PassOutcome(None, "still running")
            self.running += 1
            try:
                self.outcomes[key] = PassOutcome(await reconcile(request))
            except Exception as exc:  # the pass's failure is the preview's answer for it
                self.outcomes[key] = PassOutcome(None, f"{type(exc).__name__}: {exc}")
            finally:
                self.running -= 1
                self.last_end = time.monotonic()
            return Result()

        return first_only

    def done(self, controller: str, request: Request) -> bool:
        """Tells whether ``controller``'s first pass over ``request`` has ended."""
        key = (controller, request)
        return key in self.outcomes and self.outcomes[key].error != "still running"


@dataclass(frozen=True, slots=True)
class FirstPasses:
    """What the first passes did.

    Attributes:
        writes: Every write they made (withheld), in order.
        events: Every event the operator would have written (withheld).
        outcomes: How each (controller, object) pass ended.
        missing: The objects whose primary pass had not ended at the timeout, as
            ``(kind, request)``.
    """

    writes: list[Write]
    events: list[Write]
    outcomes: dict[tuple[str, Request], PassOutcome]
    missing: list[tuple[str, Request]]


async def first_passes(
    config: KubeConfig,
    settings: OperatorSettings,
    objects: list[Obj],
    *,
    timeout: float,
    overlay: Overlay | None = None,
) -> FirstPasses:
    """Runs the operator's first pass over each of ``objects`` (live ray.io objects) with every
    write withheld; returns once each primary pass ended and no pass ran for
    :data:`QUIET_SECONDS`, or after ``timeout`` seconds. ``overlay``: objects that stand in for
    the server's (see :class:`~rayop.preview.recording_client.RecordingClient`)."""
    targets = [(str(o["kind"]), _request(o)) for o in objects]
    namespaces = sorted({r.namespace for _, r in targets})
    settings = dataclasses.replace(
        settings,
        watch_namespaces=tuple(namespaces),
        enable_leader_election=False,
        metrics_addr="0",
        health_probe_bind_address="0",
        use_kubernetes_proxy=True,
        dashboard_resolver=None,
    )
    limiter = PassLimiter(frozenset(r for _, r in targets))
    client = RecordingClient(
        config, send=False, overlay=overlay, qps=settings.qps, burst=settings.burst
    )
    events = RecordingClient(config, send=False, qps=settings.qps, burst=settings.burst)
    async with client, events:
        manager = build_operator(
            client,
            settings,
            OperatorMetrics(),
            kinds=[k for k in KINDS if any(k == kind for kind, _ in targets)],
            wrap_reconcile=limiter.wrap,
            event_client=events,
        ).manager
        running = asyncio.create_task(manager.run(), name="preview operator")
        try:
            await manager.wait_ready()
            missing = await _wait(limiter, targets, timeout)
        finally:
            manager.request_stop()
            with contextlib.suppress(Exception):
                await asyncio.wait([running])
        if not running.cancelled() and (failure := running.exception()) is not None:
            raise failure
    return FirstPasses(list(client.writes), list(events.writes), dict(limiter.outcomes), missing)


def _request(obj: Obj) -> Request:
    meta = obj["metadata"]
    return Request(str(meta.get("namespace") or ""), str(meta["name"]))


async def _wait(
    limiter: PassLimiter, targets: list[tuple[str, Request]], timeout: float
) -> list[tuple[str, Request]]:
    deadline = time.monotonic() + timeout
    while True:
        missing = [(k, r) for k, r in targets if not limiter.done(PRIMARY[k], r)]
        quiet = limiter.running == 0 and time.monotonic() - limiter.last_end >= QUIET_SECONDS
        if (not missing and quiet) or time.monotonic() >= deadline:
            return missing
        await asyncio.sleep(_POLL_SECONDS)
