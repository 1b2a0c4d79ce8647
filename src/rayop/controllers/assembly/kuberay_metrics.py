"""KubeRay's nine ``kuberay_*`` metrics, registered only with --enable-metrics.

KubeRay v1.7.0: ``ray-operator/controllers/ray/metrics/`` (``ray_cluster_metrics.go``,
``ray_job_metrics.go``, ``ray_service_metrics.go``).

The info and condition gauges are computed at scrape time from the informer caches (value 1,
the state in the labels), as KubeRay's collectors list the CRs from its cache. The two duration
gauges are set at the transitions KubeRay sets them:

- ``kuberay_cluster_provisioned_duration_seconds``: when a RayCluster's ``RayClusterProvisioned``
  condition turns True (it was False or unset), seconds since its creation;
- ``kuberay_job_execution_duration_seconds``: when a RayJob's ``jobDeploymentStatus`` goes from
  a non-terminal value to ``Complete``, ``Failed`` or ``Retrying``, seconds since its
  ``status.startTime``; ``retry_count`` is the previous status's ``failed`` count.

The transitions are observed on the RayCluster and RayJob caches (the update that shows the
operator's status write), only while this replica leads; a deleted object's duration series are
removed (KubeRay's ``DeletePartialMatch`` on name and namespace).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from rayop.api.common import parse_time
from rayop.api.keys import RAY_ORIGINATED_FROM_CRD
from rayop.apimachinery.objects import ObjView as Obj
from rayop.kube.resources import RAY_CLUSTERS, RAY_JOBS, RAY_SERVICES
from rayop.runtime.informers.cache_reader import CacheReader
from rayop.runtime.informers.factory import InformerFactory
from rayop.runtime.informers.shared_informer import EventHandlerFuncs
from rayop.runtime.manager import Manager

OBJECT_LABELS: Final = ("name", "namespace", "uid")
JOB_DURATION_LABELS: Final = (*OBJECT_LABELS, "job_deployment_status", "retry_count")

PROVISIONED: Final = "RayClusterProvisioned"
SERVICE_READY: Final = "Ready"
UPGRADE_IN_PROGRESS: Final = "UpgradeInProgress"
TERMINAL_JOB_STATUSES: Final = frozenset({"Complete", "Failed"})
RETRYING: Final = "Retrying"

KUBERAY_METRIC_NAMES: Final = (
    "kuberay_cluster_info",
    "kuberay_cluster_condition_provisioned",
    "kuberay_cluster_provisioned_duration_seconds",
    "kuberay_job_info",
    "kuberay_job_deployment_status",
    "kuberay_job_execution_duration_seconds",
    "kuberay_service_info",
    "kuberay_service_condition_ready",
    "kuberay_service_condition_upgrade_in_progress",
)
"""Every series name this module exports."""

_HELP: Final[Mapping[str, str]] = {
    "kuberay_cluster_info": "Metadata information about RayCluster custom resources",
    "kuberay_cluster_condition_provisioned": "Indicates whether the RayCluster is provisioned",
    "kuberay_cluster_provisioned_duration_seconds": (
        "The time, in seconds, when a RayCluster's `RayClusterProvisioned` status transitions "
        "from false (or unset) to true"
    ),
    "kuberay_job_info": "Metadata information about RayJob custom resources",
    "kuberay_job_deployment_status": "The RayJob's current deployment status",
    "kuberay_job_execution_duration_seconds": (
        "Duration from when the RayJob CR's JobDeploymentStatus transitions from Initializing "
        "to either the Retrying state or a terminal state, such as Complete or Failed."
    ),
    "kuberay_service_info": "Metadata information about RayService custom resources",
    "kuberay_service_condition_ready": "Describes whether the RayService is ready.",
    "kuberay_service_condition_upgrade_in_progress": (
        "Describes whether the RayService is performing a zero-downtime upgrade."
    ),
}


def _family(name: str, labels: Sequence[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, _HELP[name], labels=list(labels))


def _ident(obj: Obj) -> list[str]:
    meta = obj.get("metadata") or {}
    return [str(meta.get("name", "")), str(meta.get("namespace", "")), str(meta.get("uid", ""))]


def condition_true(obj: Obj | None, condition_type: str) -> bool:
    """Tells whether ``status.conditions`` holds ``condition_type`` with status ``True``."""
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == condition_type and c.get("status") == "True" for c in conditions)


def _bool_label(value: bool) -> str:
    return "true" if value else "false"


class DurationSeries:
    """Gauge series set at transitions and removed by name and namespace."""

    def __init__(self, name: str, labels: Sequence[str]) -> None:
        self.name = name
        self.labels = tuple(labels)
        self._values: dict[tuple[str, ...], float] = {}

    def set(self, label_values: Sequence[str], value: float) -> None:
        """Sets the series of ``label_values`` (ordered as :attr:`labels`) to ``value``."""
        self._values[tuple(label_values)] = value

    def delete_object(self, name: str, namespace: str) -> int:
        """Removes every series of object ``namespace/name``; returns how many."""
        gone = [k for k in self._values if k[0] == name and k[1] == namespace]
        for key in gone:
            del self._values[key]
        return len(gone)

    def family(self) -> GaugeMetricFamily:
        """Returns the current series as one gauge family."""
        family = _family(self.name, self.labels)
        for key, value in sorted(self._values.items()):
            family.add_metric(list(key), value)
        return family


class KubeRayMetrics:
    """The three KubeRay collectors over the RayCluster, RayJob and RayService caches.

    Args:
        clusters: The RayCluster cache.
        jobs: The RayJob cache.
        services: The RayService cache.
        wall: The current UTC wall time (the manager's clock).
    """

    def __init__(
        self,
        clusters: CacheReader,
        jobs: CacheReader,
        services: CacheReader,
        *,
        wall: Callable[[], datetime],
    ) -> None:
        self._clusters = clusters
        self._jobs = jobs
        self._services = services
        self._wall = wall
        self.cluster_provisioned_duration = DurationSeries(
            "kuberay_cluster_provisioned_duration_seconds", OBJECT_LABELS
        )
        self.job_execution_duration = DurationSeries(
            "kuberay_job_execution_duration_seconds", JOB_DURATION_LABELS
        )

    # -- prometheus_client collector protocol -------------------------------------------------

    def describe(self) -> Iterable[Metric]:
        """Returns the families without samples (so registering reads no cache)."""
        return [
            self.cluster_provisioned_duration.family(),
            *self._cache_families(),
            self.job_execution_duration.family(),
        ]

    def collect(self) -> Iterable[Metric]:
        """Returns every kuberay_* family computed from the caches now; never blocks."""
        cluster_info, provisioned, job_info, job_status, svc_info, ready, upgrading = (
            self._cache_families()
        )
        for rc in self._clusters.list():
            ident = _ident(rc)
            owner = ((rc.get("metadata") or {}).get("labels") or {}).get(
                RAY_ORIGINATED_FROM_CRD, "None"
            )
            cluster_info.add_metric([*ident, owner], 1)
            provisioned.add_metric([*ident, _bool_label(condition_true(rc, PROVISIONED))], 1)
        for job in self._jobs.list():
            ident = _ident(job)
            job_info.add_metric(ident, 1)
            status = str((job.get("status") or {}).get("jobDeploymentStatus") or "")
            job_status.add_metric([*ident, status], 1)
        for svc in self._services.list():
            ident = _ident(svc)
            svc_info.add_metric(ident, 1)
            ready.add_metric([*ident, _bool_label(condition_true(svc, SERVICE_READY))], 1)
            upgrading.add_metric([*ident, _bool_label(condition_true(svc, UPGRADE_IN_PROGRESS))], 1)
        return [
            self.cluster_provisioned_duration.family(),
            cluster_info,
            provisioned,
            self.job_execution_duration.family(),
            job_info,
            job_status,
            svc_info,
            ready,
            upgrading,
        ]

    @staticmethod
    def _cache_families() -> tuple[GaugeMetricFamily, ...]:
        cond = (*OBJECT_LABELS, "condition")
        return (
            _family("kuberay_cluster_info", (*OBJECT_LABELS, "owner_kind")),
            _family("kuberay_cluster_condition_provisioned", cond),
            _family("kuberay_job_info", OBJECT_LABELS),
            _family("kuberay_job_deployment_status", (*OBJECT_LABELS, "deployment_status")),
            _family("kuberay_service_info", OBJECT_LABELS),
            _family("kuberay_service_condition_ready", cond),
            _family("kuberay_service_condition_upgrade_in_progress", cond),
        )

    # -- transitions --------------------------------------------------------------------------

    def _seconds_since(self, timestamp: Any) -> float | None:
        if not isinstance(timestamp, str) or not timestamp:
            return None
        return (self._wall() - parse_time(timestamp)).total_seconds()

    def observe_cluster_status(self, old: Obj, new: Obj) -> None:
        """Sets the provisioned duration when ``RayClusterProvisioned`` turns True."""
        if condition_true(old, PROVISIONED) or not condition_true(new, PROVISIONED):
            return
        seconds = self._seconds_since((new.get("metadata") or {}).get("creationTimestamp"))
        if seconds is not None:
            self.cluster_provisioned_duration.set(_ident(new), seconds)

    def observe_job_status(self, old: Obj, new: Obj) -> None:
        """Sets the execution duration when a job turns Complete, Failed or Retrying."""
        old_status = old.get("status") or {}
        new_status = new.get("status") or {}
        before = old_status.get("jobDeploymentStatus") or ""
        after = new_status.get("jobDeploymentStatus") or ""
        if before in TERMINAL_JOB_STATUSES:
            return
        if after not in TERMINAL_JOB_STATUSES and after != RETRYING:
            return
        seconds = self._seconds_since(new_status.get("startTime"))
        if seconds is None:
            return
        retries = int(old_status.get("failed") or 0)
        self.job_execution_duration.set([*_ident(new), str(after), str(retries)], seconds)

    def forget_cluster(self, obj: Obj) -> None:
        """Removes a deleted RayCluster's duration series."""
        name, namespace, _ = _ident(obj)
        self.cluster_provisioned_duration.delete_object(name, namespace)

    def forget_job(self, obj: Obj) -> None:
        """Removes a deleted RayJob's duration series."""
        name, namespace, _ = _ident(obj)
        self.job_execution_duration.delete_object(name, namespace)


def register_kuberay_metrics(
    informers: InformerFactory,
    registry: CollectorRegistry,
    *,
    wall: Callable[[], datetime],
    is_leader: Callable[[], bool],
) -> KubeRayMetrics:
    """Registers the KubeRay collectors on ``registry`` and their cache handlers; returns them.

    Durations are observed only while ``is_leader()`` (KubeRay sets them in its reconciles).
    """
    clusters = informers.informer(RAY_CLUSTERS)
    jobs = informers.informer(RAY_JOBS)
    metrics = KubeRayMetrics(clusters, jobs, informers.informer(RAY_SERVICES), wall=wall)

    def on_cluster_update(old: Obj, new: Obj) -> None:
        if is_leader():
            metrics.observe_cluster_status(old, new)

    def on_job_update(old: Obj, new: Obj) -> None:
        if is_leader():
            metrics.observe_job_status(old, new)

    clusters.add_event_handler(
        EventHandlerFuncs(update=on_cluster_update, delete=metrics.forget_cluster)
    )
    jobs.add_event_handler(EventHandlerFuncs(update=on_job_update, delete=metrics.forget_job))
    registry.register(metrics)
    return metrics


def enable_kuberay_metrics(manager: Manager[Any]) -> KubeRayMetrics:
    """Registers the KubeRay collectors on ``manager``'s metrics registry (--enable-metrics)."""
    return register_kuberay_metrics(
        manager.informers,
        manager.metrics.registry,
        wall=manager.clock.wall,
        is_leader=manager.is_leader,
    )
