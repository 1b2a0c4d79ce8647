"""rayop's own checks: values KubeRay lets through that rayop's controllers cannot act on.

They were inferred, not read in KubeRay, and run only when KubeRay's checks pass (so an object
KubeRay refuses always gets KubeRay's message). Each message names the field: missing,
duplicate or label-invalid group names (KubeRay's webhook also refuses duplicates), negative
replica counts, ``numOfHosts`` < 1, unknown head service types and ``managedBy`` values, a
``rayStartParams.resources`` that is not a JSON object, GCS FT Redis without an address, an
``upgradeStrategy`` in an embedded cluster spec, unknown submission modes and upgrade types,
unparsable ``entrypointResources`` and ``serveConfigV2``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from enum import StrEnum

import yaml

from rayop.api.common import MANAGED_BY_KUBERAY, MANAGED_BY_MULTIKUEUE
from rayop.api.raycluster import GcsFaultToleranceBackend, RayClusterSpec
from rayop.api.rayjob import JobSubmissionMode, RayJobSpec
from rayop.api.rayservice import RayServiceSpec, RayServiceUpgradeType

__all__ = ["cluster_spec_checks", "rayjob_checks", "rayservice_checks"]

SERVICE_TYPES = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def cluster_spec_checks(spec: RayClusterSpec, at: str, *, embedded_in: str = "") -> list[str]:
    """Returns rayop's problems with a cluster spec found at ``at`` (``spec``,
    ``spec.rayClusterSpec``, ...); ``embedded_in`` names the RayJob or RayService kind holding
    it, which may not set ``upgradeStrategy``."""
    problems = []
    head = spec.head_group_spec
    if head.service_type and head.service_type not in SERVICE_TYPES:
        problems.append(f"{at}.headGroupSpec.serviceType: {head.service_type!r} is unknown")
    problems += _resources_param(head.ray_start_params, f"{at}.headGroupSpec")
    seen: set[str] = set()
    for i, group in enumerate(spec.worker_group_specs or ()):
        where = f"{at}.workerGroupSpecs[{i}]"
        if not group.group_name:
            problems.append(f"{where}.groupName: empty")
        elif group.group_name in seen:
            problems.append(f"{where}.groupName: {group.group_name!r} is used by another group")
        elif len(group.group_name) > 63 or not _LABEL_VALUE.fullmatch(group.group_name):
            problems.append(f"{where}.groupName: {group.group_name!r} is not a valid label value")
        seen.add(group.group_name)
        if group.replicas < 0:
            problems.append(f"{where}.replicas: {group.replicas} is negative")
        if group.num_of_hosts < 1:
            problems.append(f"{where}.numOfHosts: {group.num_of_hosts} is less than 1")
        problems += _resources_param(group.ray_start_params, where)
    if spec.managed_by is not None and spec.managed_by not in (
        MANAGED_BY_KUBERAY,
        MANAGED_BY_MULTIKUEUE,
    ):
        problems.append(f"{at}.managedBy: {spec.managed_by!r} is not a supported manager")
    options = spec.gcs_fault_tolerance_options
    if (
        options is not None
        and options.backend in (None, GcsFaultToleranceBackend.REDIS)
        and not options.redis_address
    ):
        problems.append(
            f"{at}.gcsFaultToleranceOptions.redisAddress: required by the redis backend"
        )
    if embedded_in and spec.upgrade_strategy is not None:
        problems.append(f"{at}.upgradeStrategy: not allowed in a {embedded_in}")
    return problems


def rayjob_checks(spec: RayJobSpec) -> list[str]:
    """Returns rayop's problems with a RayJob spec (the embedded cluster spec included)."""
    problems = _one_of(spec.submission_mode, JobSubmissionMode, "spec.submissionMode")
    if spec.entrypoint_resources and not _is_json_object(spec.entrypoint_resources):
        problems.append("spec.entrypointResources: not a JSON object")
    if spec.ray_cluster_spec is not None:
        problems += cluster_spec_checks(
            spec.ray_cluster_spec, "spec.rayClusterSpec", embedded_in="RayJob"
        )
    return problems


def rayservice_checks(spec: RayServiceSpec) -> list[str]:
    """Returns rayop's problems with a RayService spec (the embedded cluster spec included)."""
    problems = cluster_spec_checks(
        spec.ray_cluster_config, "spec.rayClusterConfig", embedded_in="RayService"
    )
    strategy = spec.upgrade_strategy
    if strategy is not None and strategy.type is not None:
        problems += _one_of(strategy.type, RayServiceUpgradeType, "spec.upgradeStrategy.type")
    if spec.serve_config_v2 and not _is_yaml_mapping(spec.serve_config_v2):
        problems.append("spec.serveConfigV2: not a YAML mapping")
    return problems


def _resources_param(params: Mapping[str, str] | None, where: str) -> list[str]:
    """``resources`` must decode to a JSON object once shell quoting and escapes are removed."""
    raw = (params or {}).get("resources")
    if raw is None or _is_json_object(raw.strip("'\"` ").replace("\\", "")):
        return []
    return [f"{where}.rayStartParams.resources: {raw!r} is not a JSON object"]


def _one_of(value: str, known: type[StrEnum], at: str) -> list[str]:
    values = [member.value for member in known]
    return [] if value in values else [f"{at}: {value!r} is not one of {values}"]


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
