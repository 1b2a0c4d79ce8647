"""The manager: runs several controllers in one process on one client and one shared cache.

Start order (controller-runtime's ``pkg/manager/internal.go`` runnable groups): HTTP servers (metrics, probes) -> informers, waiting
for every cache to sync (on every replica; ``/readyz`` turns ready then) -> controllers that do
not need leadership -> leader election -> the other controllers, only once leading. Without leader
election the manager acts as if elected at once.

Runnables (:meth:`Manager.add_runnable`) are long-running coroutines beside the controllers: those
that need leadership start once leading and are cancelled when leadership ends; the others start
with the first controllers. Start gates (:meth:`Manager.add_start_gate`) are awaited after the
caches sync and before any controller starts (a sharded replica holds its own Lease first). A
runnable that raises :class:`LeadershipLost` stops every controller at once, as a lost leader
election does; any other failure ends :meth:`Manager.run` with it.

Losing leadership is fatal (controller-runtime's ``OnStoppedLeading`` exits): :meth:`Manager.run` stops the controllers at once and raises
:class:`LeadershipLost`; the process must exit non-zero. :meth:`Manager.stop` is the graceful path
(SIGTERM): controllers stop, then the Lease is released, then informers and servers stop.

Every task the manager starts belongs to a :class:`~rayop.runtime.supervisor.TaskSupervisor`
(its own, the informers', the event recorders'); when :meth:`Manager.run` returns, none is still
pending. A component that fails to stop is logged with its name and traceback, and the others
are still stopped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, TypeVar

from rayop.kube.client import KubeClient
from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.controller import CacheSyncTimeoutError, Controller
from rayop.runtime.decisions import DecisionLog
from rayop.runtime.events.metrics import EventMetrics
from rayop.runtime.events.recorder import EventClient, EventRecorder
from rayop.runtime.informers.factory import NO_FILTER, CacheConfig, InformerFactory
from rayop.runtime.informers.reflector import ListWatchClient
from rayop.runtime.leaderelection import (
    DEFAULT_LEADER_ELECTION,
    LeaderElectionSettings,
    LeaderElector,
    LeaseClient,
)
from rayop.runtime.metrics import OperatorMetrics
from rayop.runtime.serving.endpoints import HttpServer, health_app, metrics_app, parse_bind_address
from rayop.runtime.supervisor import TaskSupervisor

log = logging.getLogger(__name__)

SERVICE_ACCOUNT_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


class LeadershipLost(Exception):
    """Leader election was lost; the process must exit non-zero without draining."""


class ManagerClient(ListWatchClient, LeaseClient, EventClient, Protocol):
    """Everything the manager and its parts need from :class:`rayop.kube.client.KubeClient`."""


ClientT = TypeVar("ClientT", bound=ManagerClient)
"""The manager's client type: what :attr:`Manager.client` hands out, typed (no cast)."""


class ManagerStopped(RuntimeError):
    """The manager stopped before its caches synced (:meth:`Manager.wait_ready`)."""


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


class Manager(Generic[ClientT]):
    """Runs controllers with shared informers, HTTP endpoints and leader election.

    What its parts share is handed out typed: :attr:`client` (of the type it was built with),
    :attr:`informers`, :attr:`clock`, :attr:`metrics` and :meth:`event_recorder`. Readiness is
    awaited with :meth:`wait_ready`.

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
        event_client: Where the event recorders write. None: for a
            :class:`~rayop.kube.client.KubeClient`, a second one on the same configuration
            with a token bucket of its own (the same qps and burst), as controller-runtime
            gives client-go's event broadcaster its own REST client, so events never spend
            the reconcile budget; for any other client, that client. Leader election gets a
            client of its own likewise (:attr:`lease_client`).
    """

    def __init__(
        self,
        client: ClientT,
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
        event_client: EventClient | None = None,
    ) -> None:
        self._client = client
        self._event_client = event_client
        self._own_clients: list[KubeClient] = []
        self.event_metrics = EventMetrics.of(metrics.registry)
        self.metrics = metrics
        self.clock = clock
        self.informers = InformerFactory(
            client, namespaces=watch_namespaces or None, config=cache_config, clock=clock
        )
        self._metrics_address = parse_bind_address(metrics_bind_address)
        self._health_address = parse_bind_address(health_probe_bind_address)
        self._cache_sync_timeout = cache_sync_timeout
        self.lease_client: ClientT | KubeClient = (
            self.client_of_its_own() if leader_election else None
        ) or client
        """Where Leases are read and renewed (leader election; a sharded replica's membership):
        a client with a token bucket of its own (see :meth:`client_of_its_own`), as
        controller-runtime gives leader election a REST client of its own, so that a renewal
        never waits behind a burst of reconcile writes past the renew deadline."""
        self.elector: LeaderElector | None = None
        if leader_election:
            settings = replace(
                leader_election_settings,
                name=leader_election_id,
                namespace=leader_election_namespace or default_lease_namespace(),
            )
            self.elector = LeaderElector(
                self.lease_client,
                settings,
                metrics=metrics,
                on_started_leading=self._on_started_leading,
                on_stopped_leading=self._on_stopped_leading,
                clock=clock,
            )
        self.decisions = DecisionLog(clock=clock)
        """Each object's last passes, for the controllers built for this manager to keep and
        the metrics server to serve (``/debug/decisions``)."""
        self._entries: list[_Entry] = []
        self._recorders: dict[str, EventRecorder] = {}
        self._servers: list[tuple[str, HttpServer]] = []
        self.metrics_server: HttpServer | None = None
        self.health_server: HttpServer | None = None
        self._caches_synced = False
        self._ready = asyncio.Event()
        """Set once every cache has synced; stays set after the caches stop."""
        self._ended = asyncio.Event()
        """Set when :meth:`run` returns or raises."""
        self._run_error: BaseException | None = None
        self._started = False
        self._stop_requested = False
        self._wake = asyncio.Event()
        """Set by :meth:`stop`, a controller failure and the end of the campaign."""
        self._failure: BaseException | None = None
        self._campaigning = False
        self._leadership_lost = False
        self._tasks = TaskSupervisor("manager")
        self._running_controllers: list[Controller] = []
        self._closers: list[tuple[str, Callable[[], Awaitable[None]]]] = []
        self._runnables: list[tuple[str, Callable[[], Awaitable[None]], bool]] = []
        self._start_gates: list[Callable[[], Awaitable[None]]] = []
        self._leader_runnables: list[asyncio.Task[None]] = []

    @property
    def client(self) -> ClientT:
        """The API client everything the manager runs shares."""
        return self._client

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

    def add_runnable(
        self, name: str, work: Callable[[], Awaitable[None]], *, need_leader_election: bool
    ) -> None:
        """Runs ``work()`` beside the controllers (only while leading, if told so); see the
        module docstring for what its failure does.

        Raises:
            RuntimeError: the manager is already running.
        """
        if self._started:
            raise RuntimeError("runnables must be added before the manager runs")
        self._runnables.append((name, work, need_leader_election))

    def add_start_gate(self, wait: Callable[[], Awaitable[None]]) -> None:
        """Has ``wait()`` awaited after the caches sync, before any controller starts."""
        self._start_gates.append(wait)

    def add_closer(self, name: str, close: Callable[[], Awaitable[None]]) -> None:
        """Registers ``close`` (named ``name`` in logs), awaited at shutdown once every
        controller has stopped: the end of what a controller's passes started (pollers)."""
        self._closers.append((name, close))

    def event_recorder(self, reporting_controller: str) -> EventRecorder:
        """Returns the (shared) event recorder for one reporting controller name."""
        recorder = self._recorders.get(reporting_controller)
        if recorder is None:
            instance = self.elector.identity if self.elector is not None else None
            recorder = EventRecorder(
                self._events_client(),
                reporting_controller=reporting_controller,
                reporting_instance=instance,
                clock=self.clock,
                metrics=self.event_metrics,
            )
            self._recorders[reporting_controller] = recorder
        return recorder

    def _events_client(self) -> EventClient:
        if self._event_client is None:
            self._event_client = self.client_of_its_own() or self._client
        return self._event_client

    @property
    def own_clients(self) -> tuple[KubeClient, ...]:
        """The clients :meth:`client_of_its_own` made, in order."""
        return tuple(self._own_clients)

    def client_of_its_own(
        self, *, qps: float | None = None, burst: int | None = None
    ) -> KubeClient | None:
        """Returns the manager client's :meth:`~rayop.kube.client.KubeClient.sibling` (a token
        bucket of its own, the same qps and burst unless given, the same request metrics),
        closed when the manager stops (:attr:`own_clients`); None when the manager's client is
        not a KubeClient (a test's fake: use that client). Never blocks (it connects on first
        use)."""
        client = self._client
        if not isinstance(client, KubeClient):
            return None
        own = client.sibling(clock=self.clock, qps=qps, burst=burst)
        self._own_clients.append(own)
        return own

    # -- state ------------------------------------------------------------------------------

    def is_ready(self) -> bool:
        """Tells whether every cache has synced (what ``/readyz`` reports)."""
        return self._caches_synced

    async def wait_ready(self) -> None:
        """Returns once every cache has synced (at once if they have).

        Raises:
            BaseException: what :meth:`run` failed with, if it ended before the caches synced.
            ManagerStopped: :meth:`run` returned (stopped) before the caches synced.
        """
        if not self._ready.is_set():
            await _until_first_done(
                asyncio.ensure_future(self._ready.wait()),
                asyncio.ensure_future(self._ended.wait()),
            )
        if self._ready.is_set():
            return
        if self._run_error is not None:
            raise self._run_error
        raise ManagerStopped("the manager stopped before its caches synced")

    def is_leader(self) -> bool:
        """Tells whether this replica leads (always True without leader election once synced)."""
        return self.elector.is_leader() if self.elector is not None else self._caches_synced

    def render_metrics(self) -> bytes:
        """Returns the text exposition of the operator metrics plus the client's REST metrics."""
        body = self.metrics.render()
        rest = getattr(self._client, "metrics", None)
        registry = getattr(rest, "registry", None)
        if registry is not None and registry is not self.metrics.registry:
            from prometheus_client.exposition import generate_latest

            body += generate_latest(registry)
        return body

    # -- lifecycle --------------------------------------------------------------------------

    async def run(self) -> None:
        """Blocks running everything until :meth:`stop` is called.

        Every task the manager starts (the elector, one watcher per running controller) belongs
        to its :class:`~rayop.runtime.supervisor.TaskSupervisor`; when this returns or raises,
        none of them is still pending.

        Raises:
            LeadershipLost: leadership was lost; controllers were stopped without draining.
            CacheSyncTimeoutError: the caches did not sync in time.
            rayop.runtime.serving.endpoints.BindError: an HTTP endpoint could not be bound.
            BaseException: a controller crashed (its error is re-raised).
        """
        if self._started:
            raise RuntimeError("a manager runs once")
        self._started = True
        graceful = True
        try:
            await self._start_servers()
            self.informers.start()
            synced = await self._sync_unless_stopped()
            if self._stop_requested:
                return  # stopped while the caches synced: nothing was started to drain
            if not synced:
                raise CacheSyncTimeoutError("timed out waiting for caches to sync")
            self._caches_synced = True
            self._ready.set()
            self._start_runnables(need_leader_election=False)
            if not await self._pass_start_gates():
                await self._wait_until_done()
                return
            await self._start_controllers(need_leader_election=False)
            if self.elector is not None:
                self._tasks.spawn(self._campaign(self.elector), name="leader election")
            else:
                await self._start_controllers(need_leader_election=True)
            await self._wait_until_done()
        except LeadershipLost as exc:
            graceful = False
            self._run_error = exc
            raise
        except BaseException as exc:
            self._run_error = exc
            raise
        finally:
            try:
                await self._shutdown(graceful=graceful)
            finally:
                self._ended.set()

    async def _pass_start_gates(self) -> bool:
        """Awaits every start gate, or a stop or failure; returns whether all passed."""
        for wait in self._start_gates:
            gate = asyncio.ensure_future(wait())
            await _until_first_done(gate, asyncio.ensure_future(self._wake.wait()))
            if not gate.done() or gate.cancelled():
                return False
            gate.result()
        return True

    def _start_runnables(self, *, need_leader_election: bool) -> None:
        for name, work, leader_only in self._runnables:
            if leader_only != need_leader_election:
                continue
            if leader_only:
                task = asyncio.get_running_loop().create_task(self._run_runnable(name, work))
                self._leader_runnables.append(task)
            else:
                self._tasks.spawn(self._run_runnable(name, work), name=name)

    async def _run_runnable(self, name: str, work: Callable[[], Awaitable[None]]) -> None:
        try:
            await work()
        except asyncio.CancelledError:
            raise
        except LeadershipLost as exc:
            log.error("%s: %s", name, exc)
            for controller in self._running_controllers:
                controller.abort()
            self._fail(exc)
        except Exception as exc:
            log.exception("%s failed", name)
            self._fail(exc)

    def _cancel_leader_runnables(self) -> None:
        for task in self._leader_runnables:
            task.cancel()

    async def _sync_unless_stopped(self) -> bool:
        """Waits for every cache to sync, or for :meth:`stop`; returns whether they synced."""
        sync = asyncio.ensure_future(self.informers.wait_for_sync(self._cache_sync_timeout))
        await _until_first_done(sync, asyncio.ensure_future(self._wake.wait()))
        return sync.done() and not sync.cancelled() and sync.result()

    async def _campaign(self, elector: LeaderElector) -> None:
        self._campaigning = True
        try:
            self._leadership_lost = await elector.run()
        except Exception as exc:
            log.exception("leader election failed")
            self._fail(exc)
        finally:
            self._campaigning = False
            self._wake.set()

    async def _wait_until_done(self) -> None:
        await self._wake.wait()
        if self._failure is not None:
            raise self._failure
        if self._leadership_lost and not self._stop_requested:
            raise LeadershipLost("leader election lost")

    async def stop(self) -> None:
        """Asks :meth:`run` to stop gracefully (releasing the Lease); returns at once."""
        self.request_stop()

    def request_stop(self) -> None:
        """Asks :meth:`run` to stop gracefully; never blocks (safe in a signal handler)."""
        self._stop_requested = True
        self._wake.set()

    async def _on_started_leading(self) -> None:
        try:
            await self._start_controllers(need_leader_election=True)
            self._start_runnables(need_leader_election=True)
        except asyncio.CancelledError:
            raise  # leadership ended while the controllers were starting
        except BaseException as exc:
            self._fail(exc)

    def _on_stopped_leading(self) -> None:
        # Runs in the very step in which renewal failed: once leadership is lost, no worker may
        # start another reconcile, not even while run() is still unwinding.
        self._cancel_leader_runnables()
        if not self._stop_requested:
            for entry in self._entries:
                if entry.need_leader_election:
                    entry.controller.abort()

    async def _start_controllers(self, *, need_leader_election: bool) -> None:
        for entry in self._entries:
            if entry.need_leader_election != need_leader_election:
                continue
            if self._stop_requested:
                return
            controller = entry.controller
            self._running_controllers.append(controller)
            await controller.start()
            self._tasks.spawn(self._watch(controller), name=f"watch {controller.name}")

    async def _watch(self, controller: Controller) -> None:
        try:
            await controller.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            log.error("controller %s crashed: %r", controller.name, exc)
            self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        if self._failure is None:
            self._failure = exc
        self._wake.set()

    async def _start_servers(self) -> None:
        if self._metrics_address is not None:
            host, port = self._metrics_address
            self.metrics_server = HttpServer(
                metrics_app(self.render_metrics, self.decisions.explain), host, port, name="metrics"
            )
            await self.metrics_server.start()
            self._servers.append(("metrics", self.metrics_server))
        if self._health_address is not None:
            host, port = self._health_address
            app = health_app(
                healthz=[("ping", lambda: True)],
                readyz=[("ping", lambda: True), ("informers-synced", self.is_ready)],
            )
            self.health_server = HttpServer(app, host, port, name="health probe")
            await self.health_server.start()
            self._servers.append(("health probe", self.health_server))

    async def _shutdown(self, *, graceful: bool) -> None:
        """Stops everything in reverse start order; logs (never raises) what fails to stop."""
        self._cancel_leader_runnables()
        if self._leader_runnables:
            await asyncio.wait(self._leader_runnables)
        for controller in reversed(self._running_controllers):
            await _stop_logged(f"controller {controller.name}", controller.stop(graceful=graceful))
        for name, close in self._closers:
            await _stop_logged(name, close())
        if self.elector is not None and self._campaigning and graceful:
            # The elector releases the Lease, then its task ends.
            await _stop_logged("leader election", self._stop_elector(self.elector))
        await _stop_logged("manager tasks", self._tasks.stop())
        await _stop_logged("informers", self.informers.stop())
        for name, recorder in self._recorders.items():
            await _stop_logged(f"event recorder {name}", recorder.close())
        for own in self._own_clients:
            await _stop_logged("a client of the manager's own", own.close())
        for name, server in self._servers:
            await _stop_logged(f"{name} server", server.stop())
        self._caches_synced = False

    async def _stop_elector(self, elector: LeaderElector) -> None:
        await elector.stop()
        while self._campaigning:
            self._wake.clear()
            await self._wake.wait()


async def _stop_logged(component: str, stopping: Awaitable[None]) -> None:
    """Awaits one component's stop; a failure is logged with its traceback, not raised."""
    try:
        await stopping
    except Exception:
        log.exception("manager shutdown: stopping %s failed", component)


async def _until_first_done(*waiters: asyncio.Future[Any]) -> None:
    """Returns once one of ``waiters`` is done; the others are cancelled and awaited first."""
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
        await asyncio.wait(waiters)
