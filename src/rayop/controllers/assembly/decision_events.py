"""``--decision-events``: each pass that ended waiting is told as a Normal Event about its object,
so ``kubectl describe`` shows the account's one line beside KubeRay's Events.

A pass waits when expectations are not yet met, its own write is not yet in the cache, a Ray
dashboard does not answer or a gate holds it back (the ``wait`` notes of
:mod:`rayop.runtime.decisions`). The Event (reason :data:`REASON`, the note
:func:`~rayop.runtime.decisions.wait_summary`) goes through the kind's own event recorder, the
one its reconciler reports with, looked up in the informer cache the controllers read (no API
request). The recorder folds isomorphic Events (same object, type and reason: the note is not
part of the key) into one series, so an object that keeps waiting costs a create and a series
patch, then only the series' periodic patches, whatever the number of passes.

Off by default: KubeRay records no such Event, and the differential tests compare Events.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

from rayop.controllers.assembly.blueprint import Kind
from rayop.controllers.raycluster.events import REPORTING_CONTROLLER as RAYCLUSTER_REPORTER
from rayop.controllers.raycronjob.blueprint import REPORTING_CONTROLLER as RAYCRONJOB_REPORTER
from rayop.controllers.raycronjob.reconciler import RAY_CRON_JOBS
from rayop.controllers.rayjob.blueprint import REPORTING_CONTROLLER as RAYJOB_REPORTER
from rayop.controllers.rayservice.settings import REPORTING_CONTROLLER as RAYSERVICE_REPORTER
from rayop.kube.client import KubeClient
from rayop.kube.resource import Resource
from rayop.kube.resources import RAY_CLUSTERS, RAY_JOBS, RAY_SERVICES
from rayop.runtime.decisions import PassAccount, wait_summary
from rayop.runtime.manager import Manager

__all__ = ["REASON", "record_waits_as_events"]

REASON: Final = "Waiting"
"""The reason of the Event a waiting pass records."""

_KINDS: Final[dict[str, tuple[Resource, str]]] = {
    "RayCluster": (RAY_CLUSTERS, RAYCLUSTER_REPORTER),
    "RayJob": (RAY_JOBS, RAYJOB_REPORTER),
    "RayService": (RAY_SERVICES, RAYSERVICE_REPORTER),
    "RayCronJob": (RAY_CRON_JOBS, RAYCRONJOB_REPORTER),
}
"""Each kind's resource and the reporting controller its reconciler records Events as."""


def record_waits_as_events(manager: Manager[KubeClient], kinds: Collection[Kind]) -> None:
    """Has every pass over an object of ``kinds`` that ended waiting record a Normal
    :data:`REASON` Event about it (an object no longer in the cache records none)."""
    lookups = {
        kind: (resource, manager.informers.informer(resource), manager.event_recorder(reporter))
        for kind, (resource, reporter) in _KINDS.items()
        if kind in kinds
    }

    def on_wait(account: PassAccount) -> None:
        found = lookups.get(account.kind)
        note = wait_summary(account)
        if found is None or note is None:
            return
        resource, informer, recorder = found
        obj = informer.get(account.namespace or None, account.name)
        if obj is not None:
            regarding = {**obj, "apiVersion": resource.api_version, "kind": resource.kind}
            recorder.event(regarding, "Normal", REASON, note)

    manager.decisions.report_waits(on_wait)
