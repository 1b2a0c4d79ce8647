"""Runs the operator until a signal: :func:`run_operator` (``rayop run`` and ``rayop up``).

It asks the API server once what KubeRay's ``main.go`` asks at startup (OpenShift's Route API,
cert-manager), builds the operator with :func:`~rayop.controllers.assembly.build.build_operator`,
serves the webhooks when they are on, and runs the manager until SIGINT or SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable
from dataclasses import replace

from rayop.controllers.assembly.build import build_operator
from rayop.controllers.assembly.operator_settings import OperatorSettings
from rayop.controllers.assembly.shard_fence import check_shard_fence
from rayop.controllers.raycluster.mtls.discovery import cert_manager_served
from rayop.controllers.raycluster.route import is_openshift_cluster
from rayop.controllers.webhooks.serving import serving
from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig
from rayop.kube.metrics import RestClientMetrics
from rayop.runtime.manager import Manager
from rayop.runtime.metrics import OperatorMetrics

log = logging.getLogger(__name__)

USER_AGENT = "rayop-operator"

OnReady = Callable[[Manager[KubeClient]], Awaitable[None]]
"""Called once every cache has synced (``rayop up`` prints its banner then)."""


def new_client(
    config: KubeConfig, settings: OperatorSettings, metrics: OperatorMetrics
) -> KubeClient:
    """Returns the operator's API client, its REST metrics in the operator's registry, with a
    token bucket per API resource at ``--qps``/``--burst`` as KubeRay's controller-runtime client
    (:mod:`rayop.kube.resource_buckets`)."""
    return KubeClient(
        config,
        qps=settings.qps,
        burst=settings.burst,
        metrics=RestClientMetrics(metrics.registry),
        user_agent=USER_AGENT,
        bucket_per_resource=True,
    )


async def run_operator(
    config: KubeConfig, settings: OperatorSettings, *, on_ready: OnReady | None = None
) -> None:
    """Blocks running the operator until SIGINT/SIGTERM (graceful) or a fatal error.

    Raises:
        rayop.runtime.manager.LeadershipLost: leadership was lost; the caller exits non-zero.
        rayop.controllers.config.startup_checks.StartupCheckError: a replica of the other
            sharding mode runs (:mod:`~rayop.controllers.assembly.shard_fence`).
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
        if settings.enable_leader_election:
            await check_shard_fence(client, settings)
        manager = build_operator(client, settings, metrics).manager
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


async def _announce_ready(manager: Manager[KubeClient], on_ready: OnReady) -> None:
    try:
        await manager.wait_ready()
    except Exception:
        return  # the manager ended before it was ready: run() raises why
    await on_ready(manager)
