"""The checks a Configuration must pass beyond its types: it may not make pods Kubernetes refuses.

KubeRay v1.7.0 copies its Configuration's sidecars, env vars, labels and annotations into every
Ray pod unchecked, so a bad name surfaces as a pod the API server rejects, over and over. rayop
refuses such a Configuration at startup instead, with the field that is wrong and the rule
Kubernetes would have applied (apimachinery's messages):

- a sidecar's name must be a DNS-1123 label, unique among the sidecars of its pod kind, and not
  one of the containers KubeRay itself adds (the head's ``autoscaler``, the workers'
  ``wait-gcs-ready`` init container: container names are unique across both lists);
- an env var name (default or a sidecar's) must be non-empty printable ASCII without ``=``, and
  may not have both a ``value`` and a ``valueFrom``;
- a default label must be a valid key and value; a default annotation must have a valid key,
  and the annotations may not exceed 256 KiB in all.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from rayop.controllers.config.configuration import Configuration, ContainerSpec, EnvVarSpec

__all__ = [
    "RESERVED_HEAD_CONTAINER_NAMES",
    "RESERVED_WORKER_CONTAINER_NAMES",
    "ConfigurationProblem",
    "configuration_problems",
]

Loc = tuple[str | int, ...]

RESERVED_HEAD_CONTAINER_NAMES: Final = frozenset({"autoscaler"})
"""Containers KubeRay adds to head pods (the in-tree autoscaler sidecar)."""
RESERVED_WORKER_CONTAINER_NAMES: Final = frozenset({"wait-gcs-ready"})
"""Containers KubeRay adds to worker pods (the init container that waits for the GCS)."""

_DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL: Final = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_LABEL_MSG: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    f"used for validation is '{_DNS1123_LABEL_FMT}')"
)
_ENV_NAME_MSG: Final = (
    "a valid environment variable name must consist only of printable ASCII characters other "
    "than '='"
)
_ANNOTATIONS_MAX_BYTES: Final = 256 * 1024
_NAME_PART_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_PART: Final = re.compile(_NAME_PART_FMT)
_LABEL_VALUE: Final = re.compile(f"({_NAME_PART_FMT})?")
_DNS1123_SUBDOMAIN: Final = re.compile(f"{_DNS1123_LABEL_FMT}(\\.{_DNS1123_LABEL_FMT})*")
_NAME_PART_MSG: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    f"alphanumeric character (regex used for validation is '{_NAME_PART_FMT}')"
)


def _key_errors(key: str) -> list[str]:
    """Returns what apimachinery's ``IsQualifiedName`` (label and annotation keys) finds wrong."""
    prefix, slash, name = key.rpartition("/")
    if slash and "/" in prefix:
        return [f"a qualified name {_NAME_PART_MSG} with an optional DNS subdomain prefix and '/'"]
    errors = []
    if slash and not prefix:
        errors.append("prefix part must be non-empty")
    elif slash and (len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix)):
        errors.append(
            "prefix part a lowercase RFC 1123 subdomain must consist of lower case "
            "alphanumeric characters, '-' or '.', and must start and end with an "
            "alphanumeric character"
        )
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if name and not _NAME_PART.fullmatch(name):
        errors.append(f"name part {_NAME_PART_MSG}")
    return errors


def _label_value_errors(value: str) -> list[str]:
    """Returns what apimachinery's ``IsValidLabelValue`` finds wrong with ``value``."""
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _LABEL_VALUE.fullmatch(value):
        errors.append(f"a valid label must be an empty string or {_NAME_PART_MSG}")
    return errors


@dataclass(frozen=True)
class ConfigurationProblem:
    """One thing wrong with a Configuration: where (wire field path) and why."""

    loc: Loc
    message: str


def _container_name_errors(name: str) -> list[str]:
    errors = []
    if len(name) > 63:
        errors.append("must be no more than 63 characters")
    if not _DNS1123_LABEL.fullmatch(name):
        errors.append(_DNS1123_LABEL_MSG)
    return errors


def _env_problems(envs: Sequence[EnvVarSpec], loc: Loc) -> list[ConfigurationProblem]:
    problems = []
    for i, env in enumerate(envs):
        name = env.name
        if not name or any(not 32 <= ord(c) <= 126 or c == "=" for c in name):
            problems.append(
                ConfigurationProblem((*loc, i, "name"), f"Invalid value: {name!r}: {_ENV_NAME_MSG}")
            )
        if env.value and env.value_from is not None:
            problems.append(
                ConfigurationProblem(
                    (*loc, i, "valueFrom"),
                    "Invalid value: may not be specified when `value` is not empty",
                )
            )
    return problems


def _sidecar_problems(
    sidecars: Sequence[ContainerSpec], field: str, reserved: frozenset[str]
) -> list[ConfigurationProblem]:
    problems: list[ConfigurationProblem] = []
    seen: set[str] = set()
    for i, sidecar in enumerate(sidecars):
        loc: Loc = (field, i, "name")
        for error in _container_name_errors(sidecar.name):
            problems.append(ConfigurationProblem(loc, f"Invalid value: {sidecar.name!r}: {error}"))
        if sidecar.name in seen:
            problems.append(
                ConfigurationProblem(
                    loc, f"Duplicate value: {sidecar.name!r}: another sidecar has this name"
                )
            )
        elif sidecar.name in reserved:
            problems.append(
                ConfigurationProblem(
                    loc,
                    f"Duplicate value: {sidecar.name!r}: KubeRay adds a container of this name",
                )
            )
        seen.add(sidecar.name)
        if not sidecar.image:
            problems.append(ConfigurationProblem((field, i, "image"), "Required value"))
        problems += _env_problems(sidecar.env or [], (field, i, "env"))
    return problems


def _metadata_problems(config: Configuration) -> list[ConfigurationProblem]:
    problems = []
    for key, value in (config.default_pod_labels or {}).items():
        loc: Loc = ("defaultPodLabels", key)
        problems += [
            ConfigurationProblem(loc, f"Invalid value: {key!r}: {e}") for e in _key_errors(key)
        ]
        problems += [
            ConfigurationProblem(loc, f"Invalid value: {value!r}: {e}")
            for e in _label_value_errors(value)
        ]
    annotations = config.default_pod_annotations or {}
    for key in annotations:
        problems += [
            ConfigurationProblem(("defaultPodAnnotations", key), f"Invalid value: {key!r}: {e}")
            for e in _key_errors(key.lower())
        ]
    size = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    if size > _ANNOTATIONS_MAX_BYTES:
        problems.append(
            ConfigurationProblem(
                ("defaultPodAnnotations",),
                f"Too long: may not be more than {_ANNOTATIONS_MAX_BYTES} bytes",
            )
        )
    return problems


def _settings_problems(config: Configuration) -> list[ConfigurationProblem]:
    problems = []
    if config.reconcile_concurrency is not None and config.reconcile_concurrency < 0:
        problems.append(
            ConfigurationProblem(
                ("reconcileConcurrency",),
                f"Invalid value: {config.reconcile_concurrency}: must be a positive integer",
            )
        )
    if config.burst is not None and config.burst < 0:
        problems.append(
            ConfigurationProblem(
                ("burst",), f"Invalid value: {config.burst}: must be a non-negative integer"
            )
        )
    return problems


def configuration_problems(config: Configuration) -> list[ConfigurationProblem]:
    """Returns everything in ``config`` that would make pods Kubernetes refuses (or settings
    that mean nothing); empty when the Configuration can be applied whole."""
    return [
        *_settings_problems(config),
        *_sidecar_problems(
            config.head_sidecar_containers or [],
            "headSidecarContainers",
            RESERVED_HEAD_CONTAINER_NAMES,
        ),
        *_sidecar_problems(
            config.worker_sidecar_containers or [],
            "workerSidecarContainers",
            RESERVED_WORKER_CONTAINER_NAMES,
        ),
        *_env_problems(config.default_container_envs or [], ("defaultContainerEnvs",)),
        *_metadata_problems(config),
    ]
