"""Semantic checks of RayCluster, RayJob and RayService that the CRD schema lets through.

One module serves the controllers' reconcile-time check and the admission webhook. Every check
KubeRay v1.7 makes in ``utils/validation.go`` is made in KubeRay's order with KubeRay's message;
as in KubeRay, the first failure is the answer. Each is a :class:`Problem` carrying KubeRay's
event reason (``InvalidRayClusterSpec``, ``InvalidRayJobMetadata``, ...) and the wording of
KubeRay's Warning event. rayop's own checks (values its controllers cannot act on, see
:mod:`.rayop_checks`) run only when KubeRay's pass. Nothing here blocks or raises.

Modules: :mod:`.raycluster`, :mod:`.rayjob`, :mod:`.rayservice` (one per kind);
:mod:`.cluster_spec` (``ValidateRayClusterSpec``, shared by the three) with :mod:`.gcs_ft` and
:mod:`.pod_template`; :mod:`.deletion` (a RayJob's deletion strategy); :mod:`.k8s_names` and
:mod:`.go_values` (apimachinery's name rules and Go's durations, integers and versions, as
KubeRay uses them); :mod:`.gates` (the feature gates some checks read, by KubeRay's names).
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
