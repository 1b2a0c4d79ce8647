"""Which batch scheduler the operator runs with, KubeRay's startup check of that choice, and the
three calls the controllers make (:func:`submit`, :func:`add_metadata`, :func:`cleanup`).

The choice is ``OperatorOptions.batch_scheduler`` (``--batch-scheduler``; the deprecated
``--enable-batch-scheduler=true`` means ``volcano``) or the ``KubernetesWAS`` feature gate; with
neither, every call is a no-op, as KubeRay's default scheduler.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from typing import Any

from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.batchscheduler.interface import BatchScheduler, ParentKind
from rayop.controllers.batchscheduler.kai_scheduler import KaiScheduler
from rayop.controllers.batchscheduler.kubernetes_was import KubernetesWASScheduler
from rayop.controllers.batchscheduler.scheduler_plugins import SchedulerPluginsScheduler
from rayop.controllers.batchscheduler.volcano import VolcanoScheduler
from rayop.controllers.batchscheduler.yunikorn import YuniKornScheduler
from rayop.controllers.config.options import OperatorOptions
from rayop.kube.client import KubeClient

__all__ = [
    "SCHEDULER_NAMES",
    "BatchSchedulerConfigError",
    "add_metadata",
    "check_batch_scheduler_config",
    "cleanup",
    "scheduler_for",
    "submit",
]

log = logging.getLogger(__name__)

_SCHEDULERS: Mapping[str, type[BatchScheduler]] = {
    "volcano": VolcanoScheduler,
    "yunikorn": YuniKornScheduler,
    "kai-scheduler": KaiScheduler,
    "scheduler-plugins": SchedulerPluginsScheduler,
}
SCHEDULER_NAMES: tuple[str, ...] = tuple(_SCHEDULERS)
"""The names ``--batch-scheduler`` takes, in KubeRay's order."""


class BatchSchedulerConfigError(ValueError):
    """The batch scheduler flags (or Configuration fields) cannot be honoured; the operator
    does not start."""


def check_batch_scheduler_config(*, enable: bool, scheduler: str, kubernetes_was: bool) -> str:
    """Checks the flags as KubeRay's ``ValidateBatchSchedulerConfig`` does; returns the name.

    Args:
        enable: ``--enable-batch-scheduler`` (deprecated: volcano).
        scheduler: ``--batch-scheduler`` ("" when unset).
        kubernetes_was: The ``KubernetesWAS`` feature gate.

    Returns:
        The scheduler to run with (``volcano`` for the deprecated flag), "" for none.

    Raises:
        BatchSchedulerConfigError: the gate with a flag, both flags, or an unknown name (the
            message lists the valid names).
    """
    if kubernetes_was:
        if enable or scheduler:
            raise BatchSchedulerConfigError(
                "the KubernetesWAS feature gate cannot be combined with --batch-scheduler or "
                "--enable-batch-scheduler"
            )
        return ""
    if enable and scheduler:
        raise BatchSchedulerConfigError(
            "both feature flags enable-batch-scheduler (deprecated) and batch-scheduler are "
            "set. Please use batch-scheduler only"
        )
    if enable:
        log.info(
            "Feature flag enable-batch-scheduler is deprecated and will not be supported soon. "
            "Use batch-scheduler instead. "
        )
        return "volcano"
    if scheduler and scheduler not in _SCHEDULERS:
        raise BatchSchedulerConfigError(
            f"scheduler is not supported, name={scheduler} "
            f"(valid names: {', '.join(SCHEDULER_NAMES)})"
        )
    if scheduler:
        log.info("Feature flag batch-scheduler is enabled", extra={"scheduler name": scheduler})
    return scheduler


@functools.cache
def _instance(name: str) -> BatchScheduler:
    if name == "kubernetes-was":
        return KubernetesWASScheduler()
    return _SCHEDULERS[name]()


def scheduler_for(options: OperatorOptions) -> BatchScheduler | None:
    """Returns the scheduler the options select; None for KubeRay's no-op default."""
    if options.feature_gates.kubernetes_was:
        return _instance("kubernetes-was")
    if options.batch_scheduler:
        return _instance(options.batch_scheduler)
    return None


async def submit(
    options: OperatorOptions, client: KubeClient, kind: ParentKind, parent: Obj
) -> None:
    """Hands a RayCluster or RayJob to the scheduler before its pods or cluster; blocks.

    Raises:
        BatchSchedulingError: the scheduler refuses the spec; ApiError: a call failed.
    """
    scheduler = scheduler_for(options)
    if scheduler is not None:
        await scheduler.submit(client, kind, parent)


def add_metadata(
    options: OperatorOptions,
    kind: ParentKind,
    parent: Obj,
    child: dict[str, Any],
    group_name: str,
) -> None:
    """Adds the scheduler's labels, annotations and schedulerName to a child about to be created."""
    scheduler = scheduler_for(options)
    if scheduler is not None:
        scheduler.add_metadata(kind, parent, child, group_name)


async def cleanup(options: OperatorOptions, client: KubeClient, rayjob: Obj) -> bool:
    """Releases what a suspended, retried or finished RayJob holds; returns whether anything
    changed; blocks.

    Raises:
        ApiError: a call failed.
    """
    scheduler = scheduler_for(options)
    return scheduler is not None and await scheduler.cleanup(client, rayjob)
