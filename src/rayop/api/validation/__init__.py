"""Semantic checks of RayCluster, RayJob and RayService that the CRD schema lets through.

One module serves the controllers' reconcile-time check and the admission webhook. Every check
KubeRay v1.7 makes in ``utils/validation.go`` is made in KubeRay's order with KubeRay's message;
as in KubeRay, the first failure is the answer. Each is a :class:`Problem` carrying KubeRay's
event reason (``InvalidRayClusterSpec``, ``InvalidRayJobMetadata``, ...) and the wording of
KubeRay's Warning event. rayop's own checks (values its controllers cannot act on, see
:mod:`.rayop_checks`) run only when KubeRay's pass. Nothing here blocks or raises.

Modules and subpackages:

- ``cluster_spec``: KubeRay v1.7's ``ValidateRayClusterSpec``: the checks of a RayCluster spec, in
  KubeRay's order.
- ``deletion``: KubeRay v1.7's checks of a RayJob's TTL and ``deletionStrategy``
  (``validateDeletionConfiguration``).
- ``first_checks``: the checks a RayJob and a RayService start with, in KubeRay's order: the
  object parses, then its metadata, then its spec.
- ``gates``: the KubeRay feature gates some checks depend on, by KubeRay's names, with KubeRay's
  defaults.
- ``gcs_ft``: KubeRay v1.7's checks of GCS fault tolerance (part of ``ValidateRayClusterSpec``).
- ``go_values``: Go's value formats that KubeRay's validation accepts: durations, integers and
  versions.
- ``history_server``: KubeRay v1.7.0's checks of ``spec.historyServerOptions`` (gate
  ``RayClusterHistoryServer``).
- ``k8s_names``: the Kubernetes name and label rules KubeRay's validation applies, with
  apimachinery's messages.
- ``network_policy``: KubeRay v1.7.0's ``validateNetworkPolicy``: the checks of
  ``spec.networkPolicy``, in order.
- ``parsing``: parsing wire JSON into a ray.io model for validation, naming what does not parse.
- ``pod_template``: reading a pod template of a cluster spec as KubeRay's checks do (wire JSON,
  tolerant).
- ``problem``: what validation reports: a problem with the event reason KubeRay gives it, and those
  reasons.
- ``raycluster``: the validation of a RayCluster: KubeRay v1.7's checks in the order its controller
  makes them.
- ``raycronjob``: KubeRay v1.7's ``ValidateRayCronJobSpec``: the name, the schedule, the zone, the
  template.
- ``rayjob``: the validation of a RayJob: KubeRay v1.7's ``validateRayJob`` (metadata, spec,
  status).
- ``rayop_checks``: rayop's own checks: values KubeRay lets through that rayop's controllers cannot
  act on.
- ``rayservice``: the validation of a RayService: KubeRay v1.7's ``validateRayService`` (metadata,
  then spec).
- ``tls_options``: KubeRay v1.7.0's ``validateTLSOptions``: what a spec with mTLS on may not set
  itself.
"""

from __future__ import annotations

from rayop.api.validation.gates import DEFAULT_GATES, Gates
from rayop.api.validation.problem import Problem, Reason
from rayop.api.validation.raycluster import (
    MAX_RAYCLUSTER_NAME_LENGTH,
    autoscaler_v1_warning,
    parse_raycluster,
    raycluster_spec_problem,
    validate_raycluster,
    validate_raycluster_status,
)
from rayop.api.validation.rayjob import MAX_RAYJOB_NAME_LENGTH, validate_rayjob
from rayop.api.validation.rayservice import (
    INITIALIZING_TIMEOUT_ANNOTATION,
    MAX_RAYSERVICE_NAME_LENGTH,
    initializing_timeout,
    validate_rayservice,
)

__all__ = [
    "DEFAULT_GATES",
    "INITIALIZING_TIMEOUT_ANNOTATION",
    "MAX_RAYCLUSTER_NAME_LENGTH",
    "MAX_RAYJOB_NAME_LENGTH",
    "MAX_RAYSERVICE_NAME_LENGTH",
    "Gates",
    "Problem",
    "Reason",
    "autoscaler_v1_warning",
    "initializing_timeout",
    "parse_raycluster",
    "raycluster_spec_problem",
    "validate_raycluster",
    "validate_raycluster_status",
    "validate_rayjob",
    "validate_rayservice",
]
