"""What a RayCronJob's next tick would create, for ``rayop preview``.

A first pass creates a RayJob only when a tick is due; otherwise it waits for the next one and
writes nothing. So beside its pass's verdict, each RayCronJob gets a line saying when its next
tick is (the schedule's first tick after ``status.lastScheduleTime``, or after its creation
before the first RayJob: KubeRay v1.7's rule, :mod:`rayop.controllers.raycronjob.timing`), which
RayJob it creates then (named as the controller names it) and the cluster that RayJob would
make (its pods and their requests), or that it is suspended. A RayCronJob the controller
refuses (KubeRay's ``ValidateRayCronJobSpec``, the template's gated fields) is refused with
that message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final

from rayop.api.common import format_time, parse_time
from rayop.api.cron import CronError, parse
from rayop.api.validation.raycronjob import schedule_spec
from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.raycronjob.child import child_name
from rayop.controllers.raycronjob.reconciler import parse_raycronjob, template_problems

__all__ = ["CRON_KIND", "cron_refusal", "next_tick_lines"]

CRON_KIND: Final = "RayCronJob"


def cron_refusal(wire: Mapping[str, Any], gates: FeatureGates) -> str | None:
    """The reason the RayCronJob controller would refuse ``wire``, or None."""
    cron, problems = parse_raycronjob(wire)
    if cron is not None:
        problems = template_problems(wire, gates)
    if not problems:
        return None
    meta = wire.get("metadata") or {}
    return problems[0].event_message(str(meta.get("namespace") or ""), str(meta.get("name")))


def next_tick_lines(
    wire: Mapping[str, Any], now: datetime, size: Callable[[Mapping[str, Any]], str]
) -> list[str]:
    """Says what the next tick creates (for a valid RayCronJob).

    Args:
        wire: The RayCronJob as stored.
        now: The wall time the preview runs at (aware).
        size: Describes a cluster by its RayCluster spec (its pods and requests).
    """
    cron, _ = parse_raycronjob(wire)
    if cron is None:
        return []
    if cron.spec.suspend:
        return ["suspended: no RayJob is created until spec.suspend is false"]
    try:
        schedule = parse(schedule_spec(cron))
    except CronError as exc:
        return [f"the schedule does not parse: {exc}"]
    last = cron.status.last_schedule_time if cron.status else None
    created = parse_time(str(cron.metadata.get("creationTimestamp") or format_time(now)))
    tick = schedule.next(parse_time(last) if last else created)
    if tick is None:
        return ["no tick within five years: no RayJob will be created"]
    due = "due now" if tick <= now else f"in {_span((tick - now).total_seconds())}"
    name = f"{cron.namespace}/{child_name(cron.name, tick)}"
    template = (wire.get("spec") or {}).get("jobTemplate") or {}
    if isinstance(template.get("rayClusterSpec"), Mapping):
        what = f"its cluster {size(template['rayClusterSpec'])}"
    elif template.get("clusterSelector"):
        selector = ", ".join(f"{k}={v}" for k, v in template["clusterSelector"].items())
        what = f"on the running cluster selected by {selector}"
    else:
        what = "no cluster of its own"
    return [f"next tick {format_time(tick)} ({due}): create RayJob {name}, {what}"]


def _span(seconds: float) -> str:
    minutes, _ = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d{hours}h"
    if hours:
        return f"{hours}h{minutes}m"
    return f"{minutes}m" if minutes else f"{int(seconds)}s"
