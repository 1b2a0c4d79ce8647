"""Wires the RayCronJob controller into a manager (KubeRay's ``SetupWithManager``).

The controller is named ``raycronjob`` and reports events as ``raycronjob-controller``. It
watches RayCronJobs with no predicate (its own status write triggers the next pass, which is
how missed ticks catch up) and nothing else, as KubeRay's: the RayJobs it creates do not
enqueue their RayCronJob. KubeRay registers it only with the ``RayCronJob`` gate on.
"""

from __future__ import annotations

from typing import cast

from rayop.controllers.common.options import OperatorOptions
from rayop.controllers.common.own_writes import enqueue_when_caught_up, track_own_writes
from rayop.controllers.common.registration import ray_watches, register_controller
from rayop.controllers.raycronjob.reconciler import (
    RAY_CRON_JOBS,
    Cache,
    CronClient,
    RayCronJobDeps,
    RayCronJobReconciler,
)
from rayop.runtime.controller import Controller
from rayop.runtime.manager import Manager

CONTROLLER_NAME = "raycronjob"
REPORTING_CONTROLLER = "raycronjob-controller"
OWNER_KIND = "RayCronJob"


def setup_raycronjob_controller(
    manager: Manager,
    *,
    options: OperatorOptions,
    max_concurrent_reconciles: int,
    use_priority_queue: bool = True,
) -> Controller:
    """Builds the ``raycronjob`` controller, registers it on ``manager`` and returns it.

    Args:
        manager: The manager whose client, shared informers, metrics and clock (queue,
            requeues, the wall time ticks are compared with) are used.
        options: Operator settings; the feature gates reach the template's RayJob checks.
        max_concurrent_reconciles: Worker count (``--reconcile-concurrency``).
        use_priority_queue: Use controller-runtime's priority queue (the default).
    """
    raycronjobs = manager.informers.informer(RAY_CRON_JOBS)
    own_writes = track_own_writes(raycronjobs, clock=manager.clock)
    deps = RayCronJobDeps(
        client=cast(CronClient, manager.client),
        raycronjobs=cast(Cache, raycronjobs),
        own_writes=own_writes,
        recorder=manager.event_recorder(REPORTING_CONTROLLER),
        options=options,
        clock=manager.clock,
    )
    controller = register_controller(
        manager,
        CONTROLLER_NAME,
        RayCronJobReconciler(deps).reconcile,
        sources=ray_watches(raycronjobs, owner_kind=OWNER_KIND, owned=[]),
        max_concurrent_reconciles=max_concurrent_reconciles,
        use_priority_queue=use_priority_queue,
    )
    enqueue_when_caught_up(own_writes, controller)
    return controller
