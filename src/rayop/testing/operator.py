"""rayop's operator for tests: a manager running chosen Ray controllers against any API server.

Usage::

    async with open_control_plane() as plane, open_operator(plane) as running:
        ...  # act as a user through plane.client; running.manager is ready

:func:`open_operator` owns the manager, its task and its client: leaving the block stops the
manager gracefully (as SIGTERM would), waits for it, and closes the client.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from prometheus_client import CollectorRegistry

from rayop.controllers.assembly.blueprint import Kind
from rayop.controllers.assembly.build import ReconcileWrapper, build_operator
from rayop.controllers.assembly.operator_settings import OperatorSettings, ShardingSettings
from rayop.controllers.config.cache_config import KUBERAY_CACHE_CONFIG
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.dashboard.transport import ServiceResolver
from rayop.controllers.kit.settings import RAYJOB_DASHBOARD_POLL_INTERVAL
from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig
from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.controller import Controller
from rayop.runtime.informers.factory import CacheConfig
from rayop.runtime.manager import Manager
from rayop.runtime.metrics import OperatorMetrics
from rayop.sim.dashboard.service_dns import ServiceDns
from rayop.testing.control_plane import PlaneUnderTest

__all__ = [
    "ALL_KINDS",
    "GATED_KINDS",
    "RAYCLUSTER_ONLY",
    "Kind",
    "ReconcileWrapper",
    "RunningOperator",
    "open_operator",
]

ALL_KINDS: Final[tuple[Kind, ...]] = ("RayCluster", "RayService", "RayJob")
"""Every Ray controller, in the order ``rayop run`` registers them."""

GATED_KINDS: Final[tuple[Kind, ...]] = ("RayCronJob",)
"""Controllers ``rayop run`` registers only with their gate on (asked for by name here)."""

RAYCLUSTER_ONLY: Final[tuple[Kind, ...]] = ("RayCluster",)
"""The default of :func:`open_operator`: the RayCluster controller alone."""


@dataclass(frozen=True)
class RunningOperator:
    """A running operator: its manager, its API client and its controllers by kind.

    Attributes:
        manager: The manager (ready: every cache has synced).
        client: The operator's own API client, closed when the operator stops.
        controllers: The primary controller of each kind asked for.
        options: The operator options the controllers run with (gates included).
        by_name: Every running controller by name, the secondary ones (``networkpolicy``,
            ``raycluster-mtls``) included.
    """

    manager: Manager[KubeClient]
    client: KubeClient
    controllers: Mapping[Kind, Controller]
    options: OperatorOptions
    by_name: Mapping[str, Controller]

    def controller(self, kind: Kind = "RayCluster") -> Controller:
        """Returns the controller of ``kind``.

        Raises:
            KeyError: that controller is not running.
        """
        return self.controllers[kind]


@contextlib.asynccontextmanager
async def open_operator(
    target: PlaneUnderTest | KubeConfig,
    *,
    controllers: Collection[Kind] = RAYCLUSTER_ONLY,
    options: OperatorOptions | None = None,
    feature_gates: Mapping[str, bool] | None = None,
    concurrency: int = 4,
    use_priority_queue: bool = True,
    watch_namespaces: Sequence[str] | None = None,
    cache_config: CacheConfig = KUBERAY_CACHE_CONFIG,
    leader_election_namespace: str | None = None,
    clock: Clock | None = None,
    client_factory: Callable[[KubeConfig], KubeClient] = KubeClient,
    wrap_reconcile: ReconcileWrapper | None = None,
    ready_timeout: float = 10.0,
    enable_metrics: bool = False,
    use_kubernetes_proxy: bool | None = None,
    rayjob_dashboard_poll_interval: float = RAYJOB_DASHBOARD_POLL_INTERVAL,
    sharding: ShardingSettings | None = None,
    decision_events: bool = False,
) -> AsyncIterator[RunningOperator]:
    """Runs rayop's manager with the chosen controllers until the block exits.

    Blocks until every cache has synced. No HTTP endpoints are served, leader election is off
    unless a namespace is given for it, and the metrics go to a registry of their own.

    Args:
        target: A plane from :func:`~rayop.testing.open_control_plane`, or any API server's
            client configuration.
        controllers: The controllers to run, by kind (see :data:`ALL_KINDS`).
        options: KubeRay's environment options (its defaults when None).
        feature_gates: Gate overrides applied on top of ``options``' gates.
        concurrency: Workers per controller (``--reconcile-concurrency``).
        use_priority_queue: controller-runtime's priority queue, else the classic queue.
        watch_namespaces: Namespaces to cache; None means all.
        cache_config: What the shared cache holds (KubeRay's filters, as ``rayop run``).
        leader_election_namespace: Campaign for the Lease in this namespace before reconciling;
            None turns leader election off.
        clock: The manager's clock (monotonic and wall); the real one when None.
        client_factory: Builds the operator's client from the configuration, e.g. a subclass
            of :class:`~rayop.kube.client.KubeClient` that injects failures.
        wrap_reconcile: Wraps every controller's reconcile function before it starts.
        ready_timeout: Seconds to wait for the caches to sync.
        enable_metrics: Register KubeRay's kuberay_* metrics (``--enable-metrics``).
        use_kubernetes_proxy: Reach Ray dashboards through the API server's services proxy
            (True) or directly at the head service's DNS name (False). None: directly on an
            embedded plane, whose simulated cluster DNS (``ServiceDns``) resolves the names
            with no API request, as KubeRay's default does in a cluster; through the proxy
            for any other API server, whose cluster DNS this host cannot resolve.
        rayjob_dashboard_poll_interval: ``--rayjob-dashboard-poll-interval`` (0: no poller).
        sharding: ``--sharding`` and its settings (None: off); needs
            ``leader_election_namespace`` (the sharder runs in the elected replica).
        decision_events: ``--decision-events``: each pass that ends waiting records a Normal
            ``Waiting`` Event with its account's one line.

    Yields:
        The running operator.

    Raises:
        ValueError: an unknown kind was asked for.
        AssertionError: the caches did not sync within ``ready_timeout``.
        rayop.runtime.manager.ManagerStopped: the manager stopped before its caches synced.
        BaseException: whatever the manager raised while starting or running.
    """
    config = target.config if isinstance(target, PlaneUnderTest) else target
    opts = options or OperatorOptions()
    if feature_gates:
        opts = replace(opts, feature_gates=opts.feature_gates.with_overrides(feature_gates))
    proxy, resolver = _dashboard_access(target, use_kubernetes_proxy)
    settings = OperatorSettings(
        reconcile_concurrency=concurrency,
        use_priority_queue=use_priority_queue,
        metrics_addr="0",
        health_probe_bind_address="0",
        enable_leader_election=leader_election_namespace is not None,
        leader_election_namespace=leader_election_namespace,
        watch_namespaces=tuple(watch_namespaces or ()),
        use_kubernetes_proxy=proxy,
        dashboard_resolver=resolver,
        options=opts,
        enable_metrics=enable_metrics,
        rayjob_dashboard_poll_interval=rayjob_dashboard_poll_interval,
        sharding=sharding,
        decision_events=decision_events,
    )
    async with client_factory(config) as client:
        assembled = build_operator(
            client,
            settings,
            OperatorMetrics(CollectorRegistry()),
            kinds=controllers,
            clock=clock or MONOTONIC,
            cache_config=cache_config,
            wrap_reconcile=wrap_reconcile,
        )
        manager = assembled.manager
        running = RunningOperator(manager, client, assembled.primaries, opts, assembled.controllers)
        task = asyncio.create_task(manager.run(), name="rayop-operator-under-test")
        try:
            await _until_ready(manager, ready_timeout)
            yield running
        finally:
            await _stop(manager, task)


def _dashboard_access(
    target: PlaneUnderTest | KubeConfig, use_kubernetes_proxy: bool | None
) -> tuple[bool, ServiceResolver | None]:
    """Returns how the RayJob and RayService controllers reach dashboards on ``target``: through
    the API server's proxy or not, and the resolver of direct addresses."""
    embedded = isinstance(target, PlaneUnderTest)
    proxy = (not embedded) if use_kubernetes_proxy is None else use_kubernetes_proxy
    if proxy or not isinstance(target, PlaneUnderTest):
        return proxy, None
    return False, ServiceDns(target.cp.resolve_service_url)


async def _until_ready(manager: Manager[KubeClient], timeout: float) -> None:
    try:
        async with asyncio.timeout(timeout):
            await manager.wait_ready()
    except TimeoutError:
        raise AssertionError(f"the operator's caches did not sync within {timeout} s") from None


async def _stop(manager: Manager[KubeClient], task: asyncio.Task[None]) -> None:
    """Stops the manager gracefully; re-raises what it failed with (a crash, not the stop)."""
    if not task.done():
        await manager.stop()
    try:
        async with asyncio.timeout(10):
            await task
    except TimeoutError:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        raise AssertionError("the operator's manager did not stop within 10 s") from None
