"""When a RayCronJob's next RayJob is due: KubeRay v1.7's rule, as a pure function.

The next tick is the schedule's first tick after ``status.lastScheduleTime`` (after
``metadata.creationTimestamp`` before the first RayJob). A tick in the future is waited for. A
tick now or in the past is due: its RayJob is created and ``lastScheduleTime`` becomes that tick,
so ticks missed while the operator was down are all run afterwards, oldest first, one per pass
(each pass is triggered by the status write of the one before it). There is no deadline after
which a missed tick is dropped and no concurrency policy: KubeRay v1.7 has neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rayop.api.cron import Schedule

__all__ = ["Decision", "decide"]


@dataclass(frozen=True)
class Decision:
    """What one pass does.

    Attributes:
        tick: The tick whose RayJob is due now; None when nothing is due.
        requeue_after: Seconds until the pass should run again (the next tick); None when
            there is no next tick to wait for (none within five years, or it is already due:
            the status write of this pass triggers the next one).
    """

    tick: datetime | None
    requeue_after: float | None


def _seconds_until(moment: datetime | None, now: datetime) -> float | None:
    if moment is None:
        return None
    seconds = (moment - now).total_seconds()
    return seconds if seconds > 0 else None


def decide(
    schedule: Schedule, *, created: datetime, last: datetime | None, now: datetime
) -> Decision:
    """Returns the due tick (if any) and when to look again.

    Args:
        schedule: The parsed schedule (its zone applied).
        created: ``metadata.creationTimestamp``.
        last: ``status.lastScheduleTime`` (None before the first RayJob).
        now: The current wall time.
    """
    tick = schedule.next(last or created)
    if tick is None:
        return Decision(None, None)
    if tick > now:
        return Decision(None, _seconds_until(tick, now))
    return Decision(tick, _seconds_until(schedule.next(tick), now))
