"""KubeRay v1.7's ``ValidateRayCronJobSpec``: the name, the schedule, the zone, the template.

Checks in KubeRay's order, first failure wins, with KubeRay's messages; every problem has the
reason ``InvalidRayCronJobSpec`` (KubeRay's Warning event, ``<namespace>/<name>: <message>``).
The template is checked as KubeRay checks it: as the spec of a RayJob with no metadata.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from rayop.api.cron import CronError, load_location, parse
from rayop.api.raycronjob import RayCronJob
from rayop.api.validation.gates import Gates
from rayop.api.validation.parsing import parse_model
from rayop.api.validation.problem import Problem, Reason
from rayop.api.validation.rayjob import MAX_RAYJOB_NAME_LENGTH, spec_problem

__all__ = ["MAX_RAYCRONJOB_NAME_LENGTH", "schedule_spec", "validate_raycronjob"]

MAX_RAYCRONJOB_NAME_LENGTH: Final = MAX_RAYJOB_NAME_LENGTH - 11
"""KubeRay's ``MaxRayCronJobNameLength``: room for the ``-<minutes since epoch>`` suffix."""


def schedule_spec(cron: RayCronJob) -> str:
    """Returns the schedule as KubeRay hands it to the parser (``TZ=<timeZone> <schedule>``)."""
    if cron.spec.time_zone is not None:
        return f"TZ={cron.spec.time_zone} {cron.spec.schedule}"
    return cron.spec.schedule


def _problem(cron: RayCronJob, gates: Gates | None) -> str | None:
    if len(cron.name) > MAX_RAYCRONJOB_NAME_LENGTH:
        return f"RayCronJob name should be no more than {MAX_RAYCRONJOB_NAME_LENGTH} characters"
    if "TZ" in cron.spec.schedule:
        return "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
    try:
        parse(cron.spec.schedule)
    except CronError as err:
        return f"invalid cron schedule: {err}"
    zone = cron.spec.time_zone
    if zone is not None:
        if zone == "":
            return (
                "timeZone must not be empty string, omit the field to use the local time zone "
                "of the KubeRay operator"
            )
        try:
            load_location(zone)
        except CronError as err:
            return f"invalid time zone: {err}"
    message = spec_problem(cron.spec.job_template, {}, gates)
    if message:
        return f"invalid RayJob template: {message}"
    return None


def validate_raycronjob(
    cron: RayCronJob | Mapping[str, Any], *, gates: Gates | None = None
) -> list[Problem]:
    """Returns why a RayCronJob (a model, or wire JSON parsed first) is refused; [] if usable.

    Args:
        cron: The RayCronJob.
        gates: KubeRay feature gates by name (KubeRay's defaults when None); the template's
            RayJob checks read them.
    """
    model, parse_errors = parse_model(RayCronJob, cron)
    if model is None:
        return [Problem(Reason.INVALID_RAYCRONJOB_SPEC, e) for e in parse_errors]
    message = _problem(model, gates)
    return [] if message is None else [Problem(Reason.INVALID_RAYCRONJOB_SPEC, message)]
