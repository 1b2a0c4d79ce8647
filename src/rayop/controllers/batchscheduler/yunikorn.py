"""Apache YuniKorn (``--batch-scheduler=yunikorn``): labels, task groups, no objects of its own.

As KubeRay v1.7 does it, every pod (and a K8sJobMode RayJob's submitter pod template and
RayCluster) gets ``schedulerName: yunikorn`` and the labels ``applicationId`` and ``queue``
from the parent's ``yunikorn.apache.org/app-id`` and ``yunikorn.apache.org/queue``. With the
parent labelled ``ray.io/gang-scheduling-enabled`` (any value), the child also gets the
``yunikorn.apache.org/task-groups`` annotation (the parent's own, else computed: one group for
the head, one per worker group with ``minReplicas x numOfHosts`` members, and for a RayJob one
for the submitter; each with one pod's resources, node selector, tolerations and affinity) and,
when it belongs to a group, ``yunikorn.apache.org/task-group-name``. YuniKorn itself creates the
placeholders; a queue that does not exist is YuniKorn's to report.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from rayop.apimachinery.objects import ObjView as Obj
from rayop.apimachinery.quantity import QuantityError, resource_list_json
from rayop.controllers.batchscheduler import gang_size
from rayop.controllers.batchscheduler.interface import (
    RAY_JOB,
    ParentKind,
    annotations_of,
    child_kind,
    labels_of,
    set_annotation,
    set_label,
    set_scheduler_name,
)
from rayop.controllers.gocompat.go_json import GoJsonError, go_string, marshal_typed
from rayop.controllers.kit.names import HEAD_GROUP_LABEL_VALUE
from rayop.kube.client import KubeClient

__all__ = ["PLUGIN_NAME", "YuniKornScheduler", "task_groups_annotation"]

log = logging.getLogger(__name__)

PLUGIN_NAME = "yunikorn"
APP_ID_LABEL = "yunikorn.apache.org/app-id"
QUEUE_LABEL = "yunikorn.apache.org/queue"
POD_APP_ID_LABEL = "applicationId"
POD_QUEUE_LABEL = "queue"
TASK_GROUP_NAME_ANNOTATION = "yunikorn.apache.org/task-group-name"
TASK_GROUPS_ANNOTATION = "yunikorn.apache.org/task-groups"
GANG_SCHEDULING_LABEL = "ray.io/gang-scheduling-enabled"
HEAD_GROUP = HEAD_GROUP_LABEL_VALUE
SUBMITTER_GROUP = "submittergroup"

_DEFAULT_SUBMITTER_POD: dict[str, Any] = {
    "containers": [
        {
            "name": "ray-job-submitter",
            "resources": {
                "requests": {"cpu": "500m", "memory": "200Mi"},
                "limits": {"cpu": "1", "memory": "1Gi"},
            },
        }
    ],
    "restartPolicy": "Never",
}
"""KubeRay's default submitter pod (``GetSubmitterTemplate`` without a template)."""


def _task_group(name: str, members: int, pod_spec: Mapping[str, Any]) -> str:
    """Returns one TaskGroup as Go marshals it (its struct's field order, omitempty)."""
    parts = [
        f'"minResource":{go_string_map(resource_list_json(gang_size.pod_resources(pod_spec)))}'
    ]
    if pod_spec.get("nodeSelector"):
        parts.append(f'"nodeSelector":{marshal_typed(pod_spec["nodeSelector"], "mapstring")}')
    if pod_spec.get("affinity") is not None:
        parts.append(f'"affinity":{marshal_typed(pod_spec["affinity"], "*core/v1.Affinity")}')
    parts.append(f'"name":{go_string(name)}')
    if pod_spec.get("tolerations"):
        tolerations = marshal_typed(pod_spec["tolerations"], "[]core/v1.Toleration")
        parts.append(f'"tolerations":{tolerations}')
    parts.append(f'"minMember":{members}')
    return "{" + ",".join(parts) + "}"


def go_string_map(values: Mapping[str, str]) -> str:
    """Returns a ``map[string]string`` as Go marshals it (keys sorted)."""
    return "{" + ",".join(f"{go_string(k)}:{go_string(values[k])}" for k in sorted(values)) + "}"


def _pod_spec(group: Obj) -> Mapping[str, Any]:
    return (group.get("template") or {}).get("spec") or {}


def task_groups_annotation(kind: ParentKind, parent: Obj) -> str:
    """Returns the task groups KubeRay computes for a RayCluster or RayJob, as JSON.

    Raises:
        ValueError: a resource quantity or a scheduling field does not parse.
    """
    spec = parent.get("spec") or {}
    cluster_spec = (spec.get("rayClusterSpec") or {}) if kind == RAY_JOB else spec
    groups = [_task_group(HEAD_GROUP, 1, _pod_spec(cluster_spec.get("headGroupSpec") or {}))]
    for group in gang_size.worker_groups(cluster_spec):
        low = group.get("minReplicas")
        hosts = group.get("numOfHosts")
        members = (low if isinstance(low, int) else 0) * (hosts if isinstance(hosts, int) else 1)
        groups.append(_task_group(str(group.get("groupName", "")), members, _pod_spec(group)))
    if kind == RAY_JOB:
        template = spec.get("submitterPodTemplate")
        submitter = (template or {}).get("spec") or {} if template else _DEFAULT_SUBMITTER_POD
        groups.append(_task_group(SUBMITTER_GROUP, 1, submitter))
    return "[" + ",".join(groups) + "]"


class YuniKornScheduler:
    """KubeRay's ``YuniKornScheduler``."""

    name = PLUGIN_NAME

    async def submit(self, client: KubeClient, kind: ParentKind, parent: Obj) -> None:
        """Nothing: YuniKorn needs no object from the operator."""
        del client, kind, parent

    def add_metadata(
        self, kind: ParentKind, parent: Obj, child: dict[str, Any], group_name: str
    ) -> None:
        """Application id and queue labels, schedulerName, and the gang annotations."""
        parent_labels = labels_of(parent)
        for source, target in ((APP_ID_LABEL, POD_APP_ID_LABEL), (QUEUE_LABEL, POD_QUEUE_LABEL)):
            if parent_labels.get(source):
                set_label(child, target, parent_labels[source])
        set_scheduler_name(child, child_kind(child), PLUGIN_NAME)
        if GANG_SCHEDULING_LABEL not in parent_labels:
            return
        value = annotations_of(parent).get(TASK_GROUPS_ANNOTATION) or ""
        if not value:
            try:
                value = task_groups_annotation(kind, parent)
            except (GoJsonError, QuantityError, ValueError) as err:
                log.error(
                    "failed to add gang scheduling related annotations to object, gang "
                    "scheduling will not be enabled for this workload: %s",
                    err,
                )
                return
        set_annotation(child, TASK_GROUPS_ANNOTATION, value)
        if group_name:
            set_annotation(child, TASK_GROUP_NAME_ANNOTATION, group_name)

    async def cleanup(self, client: KubeClient, rayjob: Obj) -> bool:
        """Nothing to release."""
        del client, rayjob
        return False
