"""NVIDIA KAI Scheduler (``--batch-scheduler=kai-scheduler``): a queue label and schedulerName.

As KubeRay v1.7 does it, every pod (and a K8sJobMode RayJob's RayCluster) gets
``schedulerName: kai-scheduler`` and the parent's ``kai.scheduler/queue`` label; KAI builds the
PodGroup itself from the pods' owner. A parent without the label is logged and its pods stay
Pending (KAI's to report). A RayJob in K8sJobMode is refused: its submitter pod is created
only after the cluster is ready, which a gang cannot wait for.
"""

from __future__ import annotations

import logging
from typing import Any

from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.batchscheduler.interface import (
    RAY_JOB,
    BatchSchedulingError,
    ParentKind,
    child_kind,
    labels_of,
    set_label,
    set_scheduler_name,
)
from rayop.kube.client import KubeClient

__all__ = ["PLUGIN_NAME", "KaiScheduler"]

log = logging.getLogger(__name__)

PLUGIN_NAME = "kai-scheduler"
QUEUE_LABEL = "kai.scheduler/queue"
K8S_JOB_MODE_REFUSED = (
    "KAI-Scheduler does not support RayJob with K8sJobMode: the submitter pod is created after "
    "RayCluster is ready, preventing proper gang scheduling"
)


class KaiScheduler:
    """KubeRay's ``KaiScheduler``."""

    name = PLUGIN_NAME

    async def submit(self, client: KubeClient, kind: ParentKind, parent: Obj) -> None:
        """Refuses a K8sJobMode RayJob; nothing else.

        Raises:
            BatchSchedulingError: a RayJob in K8sJobMode.
        """
        del client
        if kind == RAY_JOB:
            mode = (parent.get("spec") or {}).get("submissionMode") or "K8sJobMode"
            if mode == "K8sJobMode":
                raise BatchSchedulingError(K8S_JOB_MODE_REFUSED)

    def add_metadata(
        self, kind: ParentKind, parent: Obj, child: dict[str, Any], group_name: str
    ) -> None:
        """schedulerName and the parent's queue label."""
        del kind, group_name
        set_scheduler_name(child, child_kind(child), PLUGIN_NAME)
        queue = labels_of(parent).get(QUEUE_LABEL) or ""
        if not queue:
            log.info(
                "Queue label missing from parent; child will remain pending",
                extra={"requiredLabel": QUEUE_LABEL},
            )
            return
        set_label(child, QUEUE_LABEL, queue)

    async def cleanup(self, client: KubeClient, rayjob: Obj) -> bool:
        """Nothing to release."""
        del client, rayjob
        return False
