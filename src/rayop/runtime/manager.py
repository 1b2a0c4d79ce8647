"""The manager: runs several controllers in one process on one client and one shared cache.

Start order (controller-machinery.md C7): HTTP servers (metrics, probes) -> informers, waiting
for every cache to sync (on every replica; ``/readyz`` turns ready then) -> controllers that do
not need leadership -> leader election -> the other controllers, only once leading. Without leader
election the manager acts as if elected at once.

Losing leadership is fatal (L6): :meth:`Manager.run` stops the controllers at once and raises
:class:`LeadershipLost`; the process must exit non-zero. :meth:`Manager.stop` is the graceful path
(SIGTERM): controllers stop, then the Lease is released, then informers and servers stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.controller import CacheSyncTimeoutError, Controller
from rayop.runtime.endpoints import HttpServer, health_app, metrics_app, parse_bind_address
from rayop.runtime.events import EventClient, EventRecorder
from rayop.runtime.informer_factory import NO_FILTER, CacheConfig, InformerFactory
from rayop.runtime.leaderelection import (
    DEFAULT_LEADER_ELECTION,
    LeaderElectionSettings,
    LeaderElector,
    LeaseClient,
)
from rayop.runtime.metrics import OperatorMetrics
from rayop.runtime.reflector import ListWatchClient

log = logging.getLogger(__name__)

SERVICE_ACCOUNT_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


class LeadershipLost(Exception):
    """Leader election was lost; the process must exit non-zero without draining."""


class ManagerClient(ListWatchClient, LeaseClient, EventClient, Protocol):
    """Everything the manager and its parts need from :class:`rayop.kube.client.KubeClient`."""


def default_lease_namespace() -> str:
    """Returns the in-cluster service account's namespace, or ``"default"`` outside a cluster."""
    try:
        with open(SERVICE_ACCOUNT_NAMESPACE_FILE, encoding="utf-8") as f:
            return f.read().strip() or "default"
    except OSError:
        return "default"


@dataclass(frozen=True, slots=True)
class _Entry:
    controller: Controller
    need_leader_election: bool


class Manager:
    """Runs controllers with shared informers, HTTP endpoints and leader election.

    Args:
        client: The API client shared by everything the manager runs.
        metrics: The operator's metrics; the client's REST metrics are served too if the client
            has them in another registry.
        metrics_bind_address: ``"host:port"``, ``":port"`` or ``"0"`` (disabled).
        health_probe_bind_address: Same, for ``/healthz`` and ``/readyz``.
        leader_election: Whether to campaign for the Lease before starting controllers.
        leader_election_id: The Lease name.
        leader_election_namespace: The Lease namespace; None means the service account's.
        leader_election_settings: Timings and identity; its name and namespace are overridden
            by the two arguments above.
        watch_namespaces: Namespaces to cache; None or empty means all.
        cache_config: Label filters and resync period of the shared cache; default: none.
        cache_sync_timeout: Seconds to wait for the caches to sync before failing.
        clock: Time source for everything the manager creates.
    """

    def __init__(
        self,
        client: ManagerClient,
        *,
        metrics: OperatorMetrics,
        metrics_bind_address: str = ":8080",
        health_probe_bind_address: str = ":8082",
        leader_election: bool = True,
        leader_election_id: str = "controller-leader",
        leader_election_namespace: str | None = None,
        leader_election_settings: LeaderElectionSettings = DEFAULT_LEADER_ELECTION,
        watch_namespaces: Sequence[str] | None = None,
        cache_config: CacheConfig = NO_FILTER,
        cache_sync_timeout: float = 120.0,
        clock: Clock = MONOTONIC,
    ) -> None:
        self.client = client
        self.metrics = metrics
        self.clock = clock
        self.informers = InformerFactory(
            client, namespaces=watch_namespaces or None, config=cache_config, clock=clock
        )
        self._metrics_address = parse_bind_address(metrics_bind_address)
        self._health_address = parse_bind_address(health_probe_bind_address)
        self._cache_sync_timeout = cache_sync_timeout
        self.elector: LeaderElector | None = None
        if leader_election:
            settings = replace(
                leader_election_settings,
                name=leader_election_id,
                namespace=leader_election_namespace or default_lease_namespace(),
            )
            self.elector = LeaderElector(
                client,
                settings,
                metrics=metrics,
                on_started_leading=self._on_started_leading,
                on_stopped_leading=self._on_stopped_leading,
                clock=clock,
            )
        self._entries: list[_Entry] = []
        self._recorders: dict[str, EventRecorder] = {}
        self._servers: list[HttpServer] = []
        self.metrics_server: HttpServer | None = None
        self.health_server: HttpServer | None = None
        self._caches_synced = False
        self._started = False
        self._stop_requested = asyncio.Event()
        self._failure: asyncio.Future[BaseException] | None = None
        self._watchers: list[asyncio.Task[None]] = []
        self._running_controllers: list[Controller] = []

    # -- configuration ----------------------------------------------------------------------

    def add_controller(self, controller: Controller, *, need_leader_election: bool = True) -> None:
        """Adds a controller, started by :meth:`run` (once leading, unless told otherwise).

        Raises:
            RuntimeError: the manager is already running.
            ValueError: a controller of that name was already added.
        """
        if self._started:
            raise RuntimeError("controllers must be added before the manager runs")
        if any(e.controller.name == controller.name for e in self._entries):
            raise ValueError(f"controller {controller.name!r} already added")
        self._entries.append(_Entry(controller, need_leader_election))

    def event_recorder(self, reporting_controller: str) -> EventRecorder:
        """Returns the (shared) event recorder for one reporting controller name."""
        recorder = self._recorders.get(reporting_controller)
        if recorder is None:
            instance = self.elector.identity if self.elector is not None else None
            recorder = EventRecorder(
                self.client,
                reporting_controller=reporting_controller,
                reporting_instance=instance,
                clock=self.clock,
            )
            self._recorders[reporting_controller] = recorder
        return recorder

    # -- state ------------------------------------------------------------------------------

    def is_ready(self) -> bool:
        """Tells whether every cache has synced (what ``/readyz`` reports)."""
        return self._caches_synced

    def is_leader(self) -> bool:
        """Tells whether this replica leads (always True without leader election once synced)."""
        return self.elector.is_leader() if self.elector is not None else self._caches_synced

    def render_metrics(self) -> bytes:
        """Returns the text exposition of the operator metrics plus the client's REST metrics."""
        body = self.metrics.render()
        rest = getattr(self.client, "metrics", None)
        registry = getattr(rest, "registry", None)
        if registry is not None and registry is not self.metrics.registry:
            from prometheus_client.exposition import generate_latest

            body += generate_latest(registry)
        return body

    # -- lifecycle --------------------------------------------------------------------------

    async def run(self) -> None:
        """Blocks running everything until :meth:`stop` is called.

        Raises:
            LeadershipLost: leadership was lost; controllers were stopped without draining.
            CacheSyncTimeoutError: the caches did not sync in time.
            OSError: an HTTP endpoint could not be bound.
            BaseException: a controller crashed (its error is re-raised).
        """
        if self._started:
            raise RuntimeError("a manager runs once")
        self._started = True
        self._failure = asyncio.get_running_loop().create_future()
        elector_task: asyncio.Task[bool] | None = None
        graceful = True
        try:
            await self._start_servers()
            self.informers.start()
            if not await self.informers.wait_for_sync(self._cache_sync_timeout):
                raise CacheSyncTimeoutError("timed out waiting for caches to sync")
            self._caches_synced = True
            await self._start_controllers(need_leader_election=False)
            if self.elector is not None:
                elector_task = asyncio.ensure_future(self.elector.run())
            else:
                await self._start_controllers(need_leader_election=True)
            await self._wait_until_done(elector_task)
        except LeadershipLost:
            graceful = False
            raise
        finally:
            await self._shutdown(elector_task, graceful=graceful)

    async def _wait_until_done(self, elector_task: asyncio.Task[bool] | None) -> None:
        assert self._failure is not None
        stop = asyncio.ensure_future(self._stop_requested.wait())
        waiting: set[asyncio.Future[Any]] = {stop, self._failure}
        if elector_task is not None:
            waiting.add(elector_task)
        try:
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if self._failure.done():
            raise self._failure.result()
        lost = elector_task is not None and elector_task.done() and elector_task.result()
        if lost and not self._stop_requested.is_set():
            raise LeadershipLost("leader election lost")

    async def stop(self) -> None:
        """Asks :meth:`run` to stop gracefully (releasing the Lease); returns at once."""
        self._stop_requested.set()

    async def _on_started_leading(self) -> None:
        try:
            await self._start_controllers(need_leader_election=True)
        except BaseException as exc:
            self._fail(exc)
            if isinstance(exc, asyncio.CancelledError):
                raise

    def _on_stopped_leading(self) -> None:
        # Runs in the very step in which renewal failed: once leadership is lost, no worker may
        # start another reconcile, not even while run() is still unwinding (L6).
        if not self._stop_requested.is_set():
            for entry in self._entries:
                if entry.need_leader_election:
                    entry.controller.abort()

    async def _start_controllers(self, *, need_leader_election: bool) -> None:
        for entry in self._entries:
            if entry.need_leader_election != need_leader_election:
                continue
            if self._stop_requested.is_set():
                return
            controller = entry.controller
            self._running_controllers.append(controller)
            await controller.start()
            self._watchers.append(asyncio.ensure_future(self._watch(controller)))

    async def _watch(self, controller: Controller) -> None:
        try:
            await controller.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            log.error("controller %s crashed: %r", controller.name, exc)
            self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        if self._failure is not None and not self._failure.done():
            self._failure.set_result(exc)

    async def _start_servers(self) -> None:
        if self._metrics_address is not None:
            host, port = self._metrics_address
            self.metrics_server = HttpServer(metrics_app(self.render_metrics), host, port)
            await self.metrics_server.start()
            self._servers.append(self.metrics_server)
        if self._health_address is not None:
            host, port = self._health_address
            app = health_app(
                healthz=[("ping", lambda: True)],
                readyz=[("ping", lambda: True), ("informers-synced", self.is_ready)],
            )
            self.health_server = HttpServer(app, host, port)
            await self.health_server.start()
            self._servers.append(self.health_server)

    async def _shutdown(self, elector_task: asyncio.Task[bool] | None, *, graceful: bool) -> None:
        for watcher in self._watchers:
            watcher.cancel()
        for controller in reversed(self._running_controllers):
            with contextlib.suppress(Exception):
                await controller.stop(graceful=graceful)
        if elector_task is not None:
            if self.elector is not None and graceful:
                await self.elector.stop()
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await elector_task
            else:
                elector_task.cancel()
                with contextlib.suppress(BaseException):
                    await elector_task
        await self.informers.stop()
        for recorder in self._recorders.values():
            await recorder.close()
        for server in self._servers:
            await server.stop()
        self._caches_synced = False
