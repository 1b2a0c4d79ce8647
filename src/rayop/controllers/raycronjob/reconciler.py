"""The RayCronJob reconciler: one pass of KubeRay v1.7's RayCronJob controller.

A pass opens as every small controller's does (:class:`~rayop.controllers.kit.opening.
Opening`: gone, done; being deleted is not looked at, as in KubeRay) and:

1. ends at once (looking again in 3 s) while the cache predates this controller's own last
   status write, so a tick's RayJob is never created twice from a stale ``lastScheduleTime``;
2. parses it once and validates it (a spec that does not parse is refused the same way, its
   parse errors as the messages) (:func:`template_problems`: KubeRay's ``ValidateRayCronJobSpec``): a problem is a
   Warning event ``InvalidRayCronJobSpec`` (``<namespace>/<name>: <message>``) and the pass
   ends with no requeue; the next change of the object is looked at afresh. KubeRay's
   RayCronJob status has no field for a reason (its schema prunes any), so the event is the
   report, as in KubeRay;
3. when ``spec.suspend`` is true records the Normal event ``SuspendedRayCronJob`` and ends;
4. computes the due tick (:mod:`.timing`): none due, it requeues at the next tick; one due, it
   creates that tick's RayJob (AlreadyExists is success: the name is deterministic), writes
   ``status.lastScheduleTime`` and requeues at the tick after it (or not at all when that one
   is due already: the status write triggers the next pass, so missed ticks catch up).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rayop.api.common import format_time, parse_time
from rayop.api.cron import parse
from rayop.api.raycronjob import RayCronJob
from rayop.api.validation.parsing import parse_model
from rayop.api.validation.problem import Problem, Reason
from rayop.api.validation.raycronjob import schedule_spec, validate_raycronjob
from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.kit import settings
from rayop.controllers.kit.gate_checks import rayjob_gate_problems
from rayop.controllers.kit.opening import Opening, Unparsed
from rayop.controllers.raycronjob.child import child_rayjob
from rayop.controllers.raycronjob.timing import decide
from rayop.kube.errors import AlreadyExists
from rayop.kube.object_client import ObjectClient
from rayop.kube.resource import Resource
from rayop.kube.resources import RAY_JOBS
from rayop.runtime.clock import Clock
from rayop.runtime.events.recorder import EventSink
from rayop.runtime.informers.cache_reader import CacheReader
from rayop.runtime.informers.frozen import thaw
from rayop.runtime.own_writes import OwnWrites
from rayop.runtime.reconcile import Request, Result

__all__ = ["RAY_CRON_JOBS", "RayCronJobDeps", "RayCronJobReconciler", "parse_raycronjob"]

log = logging.getLogger(__name__)

RAY_CRON_JOBS = Resource("ray.io", "v1", "raycronjobs", "RayCronJob")
SUSPENDED_NOTE = "RayCronJob suspended, no new RayJobs will be created"


@dataclass(frozen=True, kw_only=True)
class RayCronJobDeps:
    """Everything a pass needs besides the RayCronJob itself."""

    client: ObjectClient
    raycronjobs: CacheReader
    own_writes: OwnWrites
    recorder: EventSink
    options: OperatorOptions
    clock: Clock
    """``wall()`` is the time ticks are compared with."""


def parse_raycronjob(wire: Mapping[str, Any]) -> tuple[RayCronJob | None, list[Problem]]:
    """Parses RayCronJob wire JSON: the model and no problems, or None and one
    ``InvalidRayCronJobSpec`` problem per field that does not parse."""
    model, errors = parse_model(RayCronJob, wire)
    return model, [Problem(Reason.INVALID_RAYCRONJOB_SPEC, e) for e in errors]


def template_problems(wire: Mapping[str, Any], gates: FeatureGates) -> list[Problem]:
    """KubeRay's ``ValidateRayCronJobSpec``, the template's gated fields included (KubeRay's
    RayJob spec check refuses them, so its RayCronJob check does too)."""
    problems = validate_raycronjob(wire, gates=gates.by_name())
    if problems:
        return problems
    template = (wire.get("spec") or {}).get("jobTemplate") or {}
    return [
        Problem(Reason.INVALID_RAYCRONJOB_SPEC, f"invalid RayJob template: {message}")
        for message in rayjob_gate_problems({"spec": template}, gates)
    ]


class RayCronJobReconciler:
    """Reconciles one RayCronJob per call (see the module docstring)."""

    def __init__(self, deps: RayCronJobDeps) -> None:
        self.deps = deps

    async def reconcile(self, request: Request) -> Result:
        """Runs one pass for ``request``.

        Raises:
            ApiError: creating the RayJob (other than AlreadyExists) or writing the status
                failed; the request is retried with backoff.
        """
        deps = self.deps
        opening = Opening(
            cache=deps.raycronjobs,
            parse=parse_raycronjob,
            own_writes=deps.own_writes,
            skip_deleting=False,  # KubeRay's RayCronJob controller does not look at deletion
            behind_requeue=settings.RAYCRONJOB_REQUEUE,
        )
        opened = opening.open(request)
        if isinstance(opened, Result):
            return opened
        wire: dict[str, Any] = thaw(opened.cached)
        if isinstance(opened, Unparsed):
            return self._refuse(request, wire, opened.problems)
        problems = template_problems(wire, deps.options.feature_gates)
        if problems:
            return self._refuse(request, wire, problems)
        cron = opened.model
        if cron.spec.suspend:
            deps.recorder.event(
                wire, "Normal", "SuspendedRayCronJob", SUSPENDED_NOTE, action="Suspend"
            )
            return Result()
        return await self._schedule(request, cron, wire)

    def _refuse(self, request: Request, wire: dict[str, Any], problems: list[Problem]) -> Result:
        """Reports the first problem as KubeRay's Warning event; no requeue (the next change of
        the object is looked at afresh)."""
        note = problems[0].event_message(request.namespace, request.name)
        self.deps.recorder.event(wire, "Warning", problems[0].reason, note, action="Validate")
        log.info("RayCronJob %s is invalid: %s", request, problems[0].message)
        return Result()

    async def _schedule(self, request: Request, cron: RayCronJob, wire: dict[str, Any]) -> Result:
        deps = self.deps
        schedule = parse(schedule_spec(cron))
        last = cron.status.last_schedule_time if cron.status else None
        created = parse_time(str(cron.metadata.get("creationTimestamp", "")))
        now = deps.clock.wall()
        decision = decide(
            schedule, created=created, last=parse_time(last) if last else None, now=now
        )
        if decision.tick is None:
            return Result(requeue_after=decision.requeue_after)
        child = child_rayjob(cron, wire, decision.tick)
        name = child["metadata"]["name"]
        try:
            await deps.client.create(RAY_JOBS, child, namespace=request.namespace)
            log.info("RayCronJob %s: created RayJob %s", request, name)
        except AlreadyExists:
            log.info("RayCronJob %s: the RayJob %s of this tick exists already", request, name)
        tick = format_time(decision.tick)
        if tick != last:
            wire["status"] = {**(wire.get("status") or {}), "lastScheduleTime": tick}
            written = await deps.client.update_status(RAY_CRON_JOBS, wire)
            deps.own_writes.record(written)
        return Result(requeue_after=decision.requeue_after)
