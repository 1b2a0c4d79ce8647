"""The ``raycronjob`` controller, described once (:data:`RAYCRONJOB`).

KubeRay's RayCronJob controller; it reports events as ``raycronjob-controller``. It watches
RayCronJobs with no predicate (its own status write triggers the next pass, which is how missed
ticks catch up) and nothing else, as KubeRay's: the RayJobs it creates do not enqueue their
RayCronJob. ``rayop run`` starts it only with the ``RayCronJob`` gate on, as KubeRay does.
"""

from __future__ import annotations

from rayop.controllers.assembly.blueprint import ControllerBlueprint, Wired, Wiring
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.kit.own_writes import track_own_writes
from rayop.controllers.kit.watches import ray_watches
from rayop.controllers.raycronjob.reconciler import (
    RAY_CRON_JOBS,
    RayCronJobDeps,
    RayCronJobReconciler,
)

CONTROLLER_NAME = "raycronjob"
REPORTING_CONTROLLER = "raycronjob-controller"
OWNER_KIND = "RayCronJob"


def _build(wiring: Wiring) -> Wired:
    raycronjobs = wiring.informers.informer(RAY_CRON_JOBS)
    own_writes = track_own_writes(raycronjobs, clock=wiring.clock)
    deps = RayCronJobDeps(
        client=wiring.client,
        raycronjobs=raycronjobs,
        own_writes=own_writes,
        recorder=wiring.recorder(REPORTING_CONTROLLER),
        options=wiring.options,
        clock=wiring.clock,
    )
    return Wired(
        reconcile=RayCronJobReconciler(deps).reconcile,
        sources=ray_watches(raycronjobs, owner_kind=OWNER_KIND, owned=[]),
        own_writes=own_writes,
    )


def _gate(options: OperatorOptions) -> bool:
    return options.feature_gates.ray_cron_job


RAYCRONJOB = ControllerBlueprint(name=CONTROLLER_NAME, kind="RayCronJob", build=_build, gate=_gate)
