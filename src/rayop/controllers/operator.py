"""Assembles the operator: one client, one manager, and the Ray controllers on it.

``rayop run`` (against any API server) and ``rayop up`` (against the embedded control plane)
both go through :func:`build_manager` and :func:`run_operator`, so the two behave the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

from rayop.controllers.common import settings
from rayop.controllers.common.cache_config import KUBERAY_CACHE_CONFIG
from rayop.controllers.common.kuberay_metrics import enable_kuberay_metrics
from rayop.controllers.common.options import OperatorOptions
from rayop.controllers.dashboard.transport import ServiceResolver
from rayop.controllers.raycluster.mtls.discovery import cert_manager_served
from rayop.controllers.raycluster.route import is_openshift_cluster
from rayop.controllers.raycluster.setup import setup_raycluster_controller
from rayop.controllers.raycronjob.setup import setup_raycronjob_controller
from rayop.controllers.rayjob.setup import setup_rayjob_controller
from rayop.controllers.rayservice.setup import setup_rayservice_controller
from rayop.controllers.webhooks.serving import WebhookSettings, serving
from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig
from rayop.kube.metrics import RestClientMetrics
from rayop.runtime.concurrency_law import LawSettings
from rayop.runtime.manager import Manager
from rayop.runtime.metrics import OperatorMetrics

log = logging.getLogger(__name__)

USER_AGENT = "rayop-operator"


@dataclass(frozen=True, slots=True)
class OperatorSettings:
    """What ``rayop run`` configures; field names and defaults follow KubeRay's flags."""

    reconcile_concurrency: int = 1
    """Workers per controller (KubeRay's --reconcile-concurrency); every controller gets this many."""
    adaptive_concurrency: bool = False
    """``--reconcile-concurrency=auto``: each controller moves its workers between 1 and
    ``max_reconcile_concurrency`` (:mod:`rayop.runtime.concurrency_law`)."""
    max_reconcile_concurrency: int = 16
    """The ceiling of adaptive concurrency (``--max-reconcile-concurrency``)."""
    use_priority_queue: bool = True
    """controller-runtime's priority queue (the default since v0.23), else the classic queue."""
    metrics_addr: str = ":8080"
    """Where /metrics is served; "0" disables it."""
    health_probe_bind_address: str = ":8082"
    """Where /healthz and /readyz are served; "0" disables it."""
    enable_leader_election: bool = True
    """Campaign for the Lease before reconciling."""
    leader_election_id: str = "ray-operator-leader"
    """The Lease name."""
    leader_election_namespace: str | None = None
    """The Lease namespace; None means the service account's (or "default" outside a cluster)."""
    watch_namespaces: tuple[str, ...] = ()
    """Namespaces to watch; empty means all."""
    qps: float = 100.0
    """Client-side token bucket rate; negative disables throttling."""
    burst: int = 200
    """Client-side token bucket capacity."""
    use_kubernetes_proxy: bool = False
    """Reach Ray dashboards through the API server's services proxy, else directly (KubeRay's
    default: ``http://<head svc>.<ns>.svc.<cluster domain>:<port>``, no API server request)."""
    dashboard_resolver: ServiceResolver | None = None
    """Maps direct dashboard URLs where cluster DNS cannot (``rayop up``'s embedded plane)."""
    rayjob_dashboard_poll_interval: float = 0.0
    """Seconds between two background GETs of a Running RayJob's job info; 0 (the default):
    every Running pass GETs it and is requeued in 3 s (KubeRay v1.7.0)."""
    options: OperatorOptions = field(default_factory=OperatorOptions.from_env)
    """KubeRay's environment options and feature gates."""
    pod_create_concurrency: int = settings.POD_CALL_CONCURRENCY
    """Pod create/delete calls of one worker group in flight at once (1: one by one, as KubeRay)."""
    enable_metrics: bool = False
    """KubeRay's --enable-metrics: export the nine kuberay_* metrics."""
    webhooks: WebhookSettings = field(default_factory=WebhookSettings)
    """Where the validating webhooks are served when ``ENABLE_WEBHOOKS=true``."""


def build_manager(
    client: KubeClient, settings: OperatorSettings, metrics: OperatorMetrics
) -> Manager:
    """Returns a manager with the Ray controllers registered on it (not yet running)."""
    manager = Manager(
        client,
        metrics=metrics,
        metrics_bind_address=settings.metrics_addr,
        health_probe_bind_address=settings.health_probe_bind_address,
        leader_election=settings.enable_leader_election,
        leader_election_id=settings.leader_election_id,
        leader_election_namespace=settings.leader_election_namespace,
        watch_namespaces=list(settings.watch_namespaces) or None,
        cache_config=KUBERAY_CACHE_CONFIG,
    )
    raycluster = setup_raycluster_controller(
        manager,
        options=settings.options,
        max_concurrent_reconciles=settings.reconcile_concurrency,
        use_priority_queue=settings.use_priority_queue,
        pod_call_concurrency=settings.pod_create_concurrency,
    )
    if settings.enable_metrics:
        enable_kuberay_metrics(manager)
    rayservice = setup_rayservice_controller(
        manager,
        options=settings.options,
        max_concurrent_reconciles=settings.reconcile_concurrency,
        use_priority_queue=settings.use_priority_queue,
        use_kubernetes_proxy=settings.use_kubernetes_proxy,
        dashboard_resolver=settings.dashboard_resolver,
    )
    rayjob = setup_rayjob_controller(
        manager,
        options=settings.options,
        max_concurrent_reconciles=settings.reconcile_concurrency,
        use_priority_queue=settings.use_priority_queue,
        use_kubernetes_proxy=settings.use_kubernetes_proxy,
        dashboard_resolver=settings.dashboard_resolver,
        poll_interval=settings.rayjob_dashboard_poll_interval,
    )
    controllers = [raycluster, rayservice, rayjob]
    if settings.options.feature_gates.ray_cron_job:
        raycronjob = setup_raycronjob_controller(
            manager,
            options=settings.options,
            max_concurrent_reconciles=settings.reconcile_concurrency,
            use_priority_queue=settings.use_priority_queue,
        )
        controllers.append(raycronjob)
    if settings.adaptive_concurrency:
        law = LawSettings(floor=1, ceiling=settings.max_reconcile_concurrency)
        for controller in controllers:
            controller.adapt_concurrency(law, rest=client.metrics)
    return manager


def new_client(
    config: KubeConfig, settings: OperatorSettings, metrics: OperatorMetrics
) -> KubeClient:
    """Returns the operator's API client, its REST metrics in the operator's registry."""
    return KubeClient(
        config,
        qps=settings.qps,
        burst=settings.burst,
        metrics=RestClientMetrics(metrics.registry),
        user_agent=USER_AGENT,
    )


async def run_operator(
    config: KubeConfig,
    settings: OperatorSettings,
    *,
    on_ready: Callable[[Manager], Awaitable[None]] | None = None,
) -> None:
    """Blocks running the operator until SIGINT/SIGTERM (graceful) or a fatal error.

    Raises:
        rayop.runtime.manager.LeadershipLost: leadership was lost; the caller exits non-zero.
        rayop.controllers.raycluster.route.OpenShiftDetectionError: the API groups could not be
            read at startup (KubeRay exits then too: Route or Ingress depends on the answer).
    """
    metrics = OperatorMetrics()
    async with new_client(config, settings, metrics) as client:
        openshift = await is_openshift_cluster(client)  # KubeRay asks once, at startup
        cert_manager = await cert_manager_served(client)  # so does KubeRay, for mTLS
        options = replace(
            settings.options, is_openshift=openshift, cert_manager_available=cert_manager
        )
        settings = replace(settings, options=options)
        manager = build_manager(client, settings, metrics)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, manager.request_stop)
        ready_task = loop.create_task(_announce_ready(manager, on_ready)) if on_ready else None
        try:
            async with contextlib.AsyncExitStack() as stack:
                if settings.options.enable_webhooks:
                    gates = settings.options.feature_gates
                    await stack.enter_async_context(serving(client, gates, settings.webhooks))
                await manager.run()
        finally:
            if ready_task is not None:
                ready_task.cancel()
                await asyncio.wait([ready_task])
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(sig)


async def _announce_ready(manager: Manager, on_ready: Callable[[Manager], Awaitable[None]]) -> None:
    while not manager.is_ready():
        await asyncio.sleep(0.05)
    await on_ready(manager)
