"""Semantic checks of RayCluster, RayJob and RayService that the CRD schema lets through.

Each ``validate_*`` function returns a list of human-readable problems, each naming the field
(``spec.workerGroupSpecs[1].minReplicas: ...``); an empty list means the object is usable. The
controllers report problems as a Warning event and a status reason and create nothing, as KubeRay
does (kuberay-v1.md §3.1 step 4, §5 "Validation", §6 step 5). Nothing here blocks or raises.

Checks taken from the reference: name length (53 for RayCluster, 47 for RayJob and RayService,
whose cluster names get a 6-character suffix) and DNS-1035 form; minReplicas <= maxReplicas;
upgradeStrategy refused on clusters made by RayJob or RayService; auth token mode needs
Ray >= 2.52; autoscaler v2 needs restartPolicy Never; managedBy values; RayJob suspend needs
shutdownAfterJobFinishes; SidecarMode refuses clusterSelector, submitterPodTemplate and
submitterConfig; RayClusterSuspending and RayClusterSuspended both True is an invalid status.
Checks added because the controller cannot act on such values (inferred, not read in KubeRay):
missing, duplicate or label-invalid group names; templates with no containers; negative replica
counts; numOfHosts < 1; GCS FT Redis without an address or with the legacy ``ray.io/ft-enabled``
annotation; unknown submission modes and upgrade types; unparsable entrypointResources and
serveConfigV2.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from rayop.api import keys
from rayop.api.common import MANAGED_BY_KUBERAY, MANAGED_BY_MULTIKUEUE, RayResource
from rayop.api.conditions import is_condition_true
from rayop.api.raycluster import (
    AuthMode,
    AutoscalerVersion,
    GcsFaultToleranceBackend,
    RayCluster,
    RayClusterConditionType,
    RayClusterSpec,
    RayClusterStatus,
)
from rayop.api.rayjob import JobSubmissionMode, RayJob
from rayop.api.rayservice import RayService, RayServiceUpgradeType

__all__ = [
    "MAX_RAYCLUSTER_NAME_LENGTH",
    "MAX_RAYJOB_NAME_LENGTH",
    "MAX_RAYSERVICE_NAME_LENGTH",
    "parse_raycluster",
    "validate_raycluster",
    "validate_raycluster_status",
    "validate_rayjob",
    "validate_rayservice",
]

MAX_RAYCLUSTER_NAME_LENGTH = 53
MAX_RAYJOB_NAME_LENGTH = 47
MAX_RAYSERVICE_NAME_LENGTH = 47
MIN_RAY_VERSION_FOR_AUTH = (2, 52)
FT_ENABLED_ANNOTATION = keys.FT_ENABLED
ORIGINATED_FROM_CRD_LABEL = keys.RAY_ORIGINATED_FROM_CRD
CLUSTER_LABEL = keys.RAY_CLUSTER
SERVICE_TYPES = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")

_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_M = TypeVar("_M", bound=BaseModel)
_R = TypeVar("_R", bound=RayResource)


def validate_raycluster(rc: RayCluster | Mapping[str, Any]) -> list[str]:
    """Returns the problems of a RayCluster (a model, or wire JSON that is parsed first)."""
    cluster, problems = _parse_named(RayCluster, rc, MAX_RAYCLUSTER_NAME_LENGTH)
    if cluster is None:
        return problems
    origin = (cluster.metadata.get("labels") or {}).get(ORIGINATED_FROM_CRD_LABEL)
    problems += _cluster_spec_problems(
        cluster.spec, "spec", annotations=cluster.metadata.get("annotations") or {}
    )
    if origin in ("RayJob", "RayService") and cluster.spec.upgrade_strategy is not None:
        problems.append(f"spec.upgradeStrategy: not allowed on a RayCluster created by a {origin}")
    return problems


def validate_raycluster_status(status: RayClusterStatus) -> list[str]:
    """Returns the problems of a RayCluster status (contradictory conditions)."""
    conditions = [c.model_dump(by_alias=True) for c in status.conditions or ()]
    if is_condition_true(conditions, RayClusterConditionType.SUSPENDING) and (
        is_condition_true(conditions, RayClusterConditionType.SUSPENDED)
    ):
        return ["status.conditions: RayClusterSuspending and RayClusterSuspended are both True"]
    return []


def parse_raycluster(obj: Mapping[str, Any]) -> tuple[RayCluster | None, list[str]]:
    """Parses RayCluster wire JSON: the model and no problems, or None and the problems."""
    return _parse(RayCluster, obj)


def validate_rayjob(rj: RayJob | Mapping[str, Any]) -> list[str]:
    """Returns the problems of a RayJob (a model, or wire JSON that is parsed first)."""
    job, problems = _parse_named(RayJob, rj, MAX_RAYJOB_NAME_LENGTH)
    if job is None:
        return problems
    spec = job.spec
    problems += _one_of(spec.submission_mode, JobSubmissionMode, "spec.submissionMode")
    if spec.ray_cluster_spec is None and not spec.cluster_selector:
        problems.append("spec: one of rayClusterSpec or clusterSelector is required")
    if spec.cluster_selector and not spec.cluster_selector.get(CLUSTER_LABEL):
        problems.append(f"spec.clusterSelector: the {CLUSTER_LABEL!r} key must name the cluster")
    if spec.ray_cluster_spec is not None:
        problems += _embedded_cluster_problems(
            spec.ray_cluster_spec, "spec.rayClusterSpec", "RayJob"
        )
    if spec.suspend and not spec.shutdown_after_job_finishes:
        problems.append(
            "spec.suspend: a RayJob can be suspended only with shutdownAfterJobFinishes"
        )
    if spec.submission_mode == JobSubmissionMode.SIDECAR_MODE:
        for wire, value in (
            ("clusterSelector", spec.cluster_selector),
            ("submitterPodTemplate", spec.submitter_pod_template),
            ("submitterConfig", spec.submitter_config),
        ):
            if value:
                problems.append(f"spec.{wire}: not supported in SidecarMode")
    if spec.backoff_limit < 0:
        problems.append(f"spec.backoffLimit: {spec.backoff_limit} is negative")
    if spec.entrypoint_resources and not _is_json_object(spec.entrypoint_resources):
        problems.append("spec.entrypointResources: not a JSON object")
    return problems


def validate_rayservice(rs: RayService | Mapping[str, Any]) -> list[str]:
    """Returns the problems of a RayService (a model, or wire JSON that is parsed first)."""
    service, problems = _parse_named(RayService, rs, MAX_RAYSERVICE_NAME_LENGTH)
    if service is None:
        return problems
    spec = service.spec
    problems += _embedded_cluster_problems(
        spec.ray_cluster_config, "spec.rayClusterConfig", "RayService"
    )
    strategy = spec.upgrade_strategy
    if strategy is not None and strategy.type is not None:
        problems += _one_of(strategy.type, RayServiceUpgradeType, "spec.upgradeStrategy.type")
    if (
        strategy is not None
        and strategy.type == RayServiceUpgradeType.NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE
        and strategy.cluster_upgrade_options is None
    ):
        problems.append(
            "spec.upgradeStrategy.clusterUpgradeOptions: required by NewClusterWithIncrementalUpgrade"
        )
    if spec.serve_config_v2 and not _is_yaml_mapping(spec.serve_config_v2):
        problems.append("spec.serveConfigV2: not a YAML mapping")
    return problems


def _parse(model: type[_M], obj: _M | Mapping[str, Any]) -> tuple[_M | None, list[str]]:
    if isinstance(obj, model):
        return obj, []
    try:
        return model.model_validate(obj), []
    except ValidationError as error:
        return None, [
            f"{'.'.join(str(part) for part in e['loc'])}: {e['msg']}" for e in error.errors()
        ]


def _parse_named(
    model: type[_R], obj: _R | Mapping[str, Any], limit: int
) -> tuple[_R | None, list[str]]:
    """Parses like :func:`_parse`, then checks the name against ``limit``."""
    parsed, problems = _parse(model, obj)
    if parsed is not None:
        problems += _name_problems(parsed.metadata, limit)
    return parsed, problems


def _one_of(value: str, known: type[StrEnum], at: str) -> list[str]:
    values = [member.value for member in known]
    return [] if value in values else [f"{at}: {value!r} is not one of {values}"]


def _embedded_cluster_problems(spec: RayClusterSpec, at: str, owner: str) -> list[str]:
    """The problems of the cluster spec a RayJob or RayService embeds (no upgradeStrategy)."""
    problems = _cluster_spec_problems(spec, at)
    if spec.upgrade_strategy is not None:
        problems.append(f"{at}.upgradeStrategy: not allowed in a {owner}")
    return problems


def _name_problems(metadata: Mapping[str, Any], limit: int) -> list[str]:
    name = str(metadata.get("name") or "")
    if not name:
        return []  # generateName: the API server names it
    problems = []
    if len(name) > limit:
        problems.append(f"metadata.name: {name!r} is longer than {limit} characters")
    if not _DNS1035_LABEL.match(name):
        problems.append(f"metadata.name: {name!r} is not a DNS-1035 label")
    return problems


def _cluster_spec_problems(
    spec: RayClusterSpec, at: str, *, annotations: Mapping[str, Any] | None = None
) -> list[str]:
    problems = []
    head = spec.head_group_spec
    if not _containers(head.template):
        problems.append(f"{at}.headGroupSpec.template.spec.containers: no container")
    if head.service_type and head.service_type not in SERVICE_TYPES:
        problems.append(f"{at}.headGroupSpec.serviceType: {head.service_type!r} is unknown")
    problems += _ray_start_params_problems(head.ray_start_params, f"{at}.headGroupSpec")
    problems += _worker_group_problems(spec, at)
    if spec.managed_by is not None and spec.managed_by not in (
        MANAGED_BY_KUBERAY,
        MANAGED_BY_MULTIKUEUE,
    ):
        problems.append(f"{at}.managedBy: {spec.managed_by!r} is not a supported manager")
    problems += _autoscaler_problems(spec, at)
    problems += _auth_problems(spec, at)
    problems += _gcs_ft_problems(spec, at, annotations or {})
    return problems


def _worker_group_problems(spec: RayClusterSpec, at: str) -> list[str]:
    problems = []
    seen: set[str] = set()
    for i, group in enumerate(spec.worker_group_specs or ()):
        where = f"{at}.workerGroupSpecs[{i}]"
        if not group.group_name:
            problems.append(f"{where}.groupName: empty")
        elif group.group_name in seen:
            problems.append(f"{where}.groupName: {group.group_name!r} is used by another group")
        elif len(group.group_name) > 63 or not _LABEL_VALUE.match(group.group_name):
            problems.append(f"{where}.groupName: {group.group_name!r} is not a valid label value")
        seen.add(group.group_name)
        if not _containers(group.template):
            problems.append(f"{where}.template.spec.containers: no container")
        for wire, value in (
            ("replicas", group.replicas),
            ("minReplicas", group.min_replicas),
            ("maxReplicas", group.max_replicas),
        ):
            if value < 0:
                problems.append(f"{where}.{wire}: {value} is negative")
        if group.min_replicas > group.max_replicas:
            problems.append(
                f"{where}.minReplicas: {group.min_replicas} is greater than "
                f"maxReplicas {group.max_replicas}"
            )
        if group.num_of_hosts < 1:
            problems.append(f"{where}.numOfHosts: {group.num_of_hosts} is less than 1")
        problems += _ray_start_params_problems(group.ray_start_params, where)
    return problems


def _ray_start_params_problems(params: Mapping[str, str] | None, where: str) -> list[str]:
    """``resources`` must decode to a JSON object once shell quoting and escapes are removed."""
    raw = (params or {}).get("resources")
    if raw is None or _is_json_object(raw.strip("'\"` ").replace("\\", "")):
        return []
    return [f"{where}.rayStartParams.resources: {raw!r} is not a JSON object"]


def _autoscaler_problems(spec: RayClusterSpec, at: str) -> list[str]:
    options = spec.autoscaler_options
    if not spec.enable_in_tree_autoscaling or options is None:
        return []
    if options.version != AutoscalerVersion.V2:
        return []
    templates = [("headGroupSpec", spec.head_group_spec.template)] + [
        (f"workerGroupSpecs[{i}]", g.template) for i, g in enumerate(spec.worker_group_specs or ())
    ]
    return [
        f"{at}.{where}.template.spec.restartPolicy: autoscaler v2 needs Never, not {policy!r}"
        for where, template in templates
        if (policy := (template.get("spec") or {}).get("restartPolicy")) not in (None, "Never")
    ]


def _auth_problems(spec: RayClusterSpec, at: str) -> list[str]:
    auth = spec.auth_options
    if auth is None or auth.mode != AuthMode.TOKEN or not spec.ray_version:
        return []
    version = _version_tuple(spec.ray_version)
    if version is not None and version < MIN_RAY_VERSION_FOR_AUTH:
        return [f"{at}.authOptions.mode: token auth needs Ray >= 2.52, not {spec.ray_version}"]
    return []


def _gcs_ft_problems(spec: RayClusterSpec, at: str, annotations: Mapping[str, Any]) -> list[str]:
    options = spec.gcs_fault_tolerance_options
    if options is None:
        return []
    problems = []
    if FT_ENABLED_ANNOTATION in annotations:
        problems.append(
            f"{at}.gcsFaultToleranceOptions: cannot be combined with the "
            f"{FT_ENABLED_ANNOTATION} annotation"
        )
    redis = options.backend in (None, GcsFaultToleranceBackend.REDIS)
    if redis and not options.redis_address:
        problems.append(
            f"{at}.gcsFaultToleranceOptions.redisAddress: required by the redis backend"
        )
    return problems


def _containers(template: Mapping[str, Any]) -> list[Any]:
    containers = (template.get("spec") or {}).get("containers")
    return containers if isinstance(containers, list) else []


def _version_tuple(text: str) -> tuple[int, ...] | None:
    match = re.match(r"^v?(\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _is_yaml_mapping(text: str) -> bool:
    try:
        return isinstance(yaml.safe_load(text), dict)
    except yaml.YAMLError:
        return False
