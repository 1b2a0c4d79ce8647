"""The ray.io/v1 RayCronJob: a RayJob template run on a cron schedule (KubeRay v1.7, alpha).

KubeRay v1.7's RayCronJob has exactly these fields: ``spec.jobTemplate`` (a RayJob spec),
``spec.schedule``, ``spec.timeZone``, ``spec.suspend`` and ``status.lastScheduleTime``. It has
no ``concurrencyPolicy``, ``startingDeadlineSeconds`` or history limits (batch/v1 CronJob's);
the CRD schema prunes such fields, as KubeRay's does.
"""

from __future__ import annotations

from typing import Annotated

from rayop.api.common import ApiModel, RayResource, Time
from rayop.api.rayjob import RayJobSpec
from rayop.api.schema import CrdField

__all__ = ["RayCronJob", "RayCronJobSpec", "RayCronJobStatus"]


class RayCronJobSpec(ApiModel):
    """The desired state of a RayCronJob."""

    job_template: RayJobSpec
    """The spec of every RayJob the schedule creates."""
    schedule: str
    """A cron schedule (robfig/cron's standard syntax: five fields or a ``@`` descriptor)."""
    time_zone: Annotated[str, CrdField({"minLength": 1})] | None = None
    """An IANA time zone name for the schedule; the operator's local zone when unset."""
    suspend: bool | None = None
    """True stops creating RayJobs (those already created are left alone)."""


class RayCronJobStatus(ApiModel):
    """The observed state of a RayCronJob."""

    last_schedule_time: Time | None = None
    """The tick of the latest RayJob created (RFC 3339, UTC)."""


class RayCronJob(RayResource):
    """A ray.io/v1 RayCronJob."""

    kind: str = "RayCronJob"
    spec: RayCronJobSpec
    status: RayCronJobStatus | None = None
