"""Building blocks shared by the ray.io/v1 models: the base model, wire types, conditions, time.

Condition helpers over wire JSON live in :mod:`rayop.api.conditions`.

Every model derives from :class:`ApiModel`: Python attribute names are the snake_case of the wire
name, the wire name is the alias (camelCase as KubeRay spells it), both are accepted on input, and
``model_dump(by_alias=True, exclude_none=True)`` gives the wire JSON.

Unknown fields are **kept** (``extra="allow"``) and dumped back under their original wire name,
so that reading an object into a model and writing it back never drops a field that a newer
KubeRay CRD (or another controller) put there. The price: a misspelt keyword argument in Python
is stored as an extra instead of being refused; construct models with care, or check
``model.model_extra``.

Enumerations are ``StrEnum`` classes. Fields whose values KubeRay's CRD restricts use the enum as
their type (the CRD schema then carries ``enum``); fields that KubeRay's CRD leaves as free strings
(for example ``status.state`` or ``spec.submissionMode``) are typed ``str`` and the enum only
names the known values, so an unexpected value parses and the controller can report it.
Enum values are stored as plain ``str`` (``use_enum_values``), so they compare equal to the
enum members and serialise without help (YAML, orjson); mypy sees the enum type.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from rayop.api import keys
from rayop.api.schema import CrdField

__all__ = [
    "API_VERSION",
    "GROUP",
    "MANAGED_BY_KUBERAY",
    "MANAGED_BY_MULTIKUEUE",
    "VERSION",
    "ApiModel",
    "Condition",
    "ConditionStatus",
    "EmbeddedObject",
    "Int32",
    "Int64",
    "ManagedBy",
    "NullableTime",
    "Quantity",
    "RayResource",
    "Time",
    "format_time",
    "list_map",
    "parse_time",
    "wire_name",
]

GROUP = "ray.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"

MANAGED_BY_KUBERAY = keys.MANAGED_BY_KUBERAY
"""``spec.managedBy`` value meaning "this operator reconciles it" (the same as unset)."""
MANAGED_BY_MULTIKUEUE = "kueue.x-k8s.io/multikueue"
"""``spec.managedBy`` value handing the object to Kueue's MultiKueue (the operator skips it)."""

Int32 = Annotated[int, CrdField({"format": "int32"})]
Int64 = Annotated[int, CrdField({"format": "int64"})]
Time = Annotated[str, CrdField({"format": "date-time"})]
"""An RFC 3339 timestamp as Kubernetes writes it (see :func:`format_time`)."""
NullableTime = Annotated[str, CrdField({"format": "date-time", "nullable": True})]
Quantity = Annotated[
    int | str,
    CrdField(
        {
            "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]"
            r"|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
        }
    ),
]
"""A Kubernetes resource quantity (int-or-string), e.g. ``"500m"``, ``"1Gi"`` or ``2``."""
EmbeddedObject = dict[str, Any]
"""An embedded Kubernetes object (PodTemplateSpec, Service, EnvVar...) kept as plain data."""

ManagedBy = Annotated[
    str,
    CrdField(
        {
            "x-kubernetes-validations": [
                {"rule": "self == oldSelf", "message": "the managedBy field is immutable"},
                {
                    "rule": f"self in ['{MANAGED_BY_KUBERAY}', '{MANAGED_BY_MULTIKUEUE}']",
                    "message": "the managedBy field value must be either "
                    f"'{MANAGED_BY_KUBERAY}' or '{MANAGED_BY_MULTIKUEUE}'",
                },
            ]
        }
    ),
]


def list_map(*keys: str) -> CrdField:
    """Returns the schema marks of a list merged by ``keys`` (``x-kubernetes-list-type: map``)."""
    return CrdField({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)})


_ACRONYMS = frozenset({"cpu", "gpu", "tpu", "ip", "url", "yaml"})


def wire_name(attribute: str) -> str:
    """Returns KubeRay's JSON name of a snake_case attribute: ``desired_cpu`` -> ``desiredCPU``.

    Words join in camelCase, and the acronyms CPU, GPU, TPU, IP, URL and YAML stay upper-case
    (``pod_ip`` -> ``podIP``, ``runtime_env_yaml`` -> ``runtimeEnvYAML``, but
    ``entrypoint_num_cpus`` -> ``entrypointNumCpus``, as KubeRay spells them).
    """
    first, *rest = attribute.split("_")
    return first + "".join(w.upper() if w in _ACRONYMS else w[:1].upper() + w[1:] for w in rest)


class ApiModel(BaseModel):
    """Base of every ray.io/v1 model: camelCase aliases, names or aliases accepted, extras kept."""

    model_config = ConfigDict(
        alias_generator=wire_name,
        populate_by_name=True,
        extra="allow",
        use_enum_values=True,
    )


class RayResource(ApiModel):
    """Fields and accessors shared by the three top-level kinds (apiVersion, kind, metadata)."""

    api_version: str = API_VERSION
    kind: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def name(self) -> str:
        """``metadata.name`` ("" when unset)."""
        return str(self.metadata.get("name", ""))

    @property
    def namespace(self) -> str:
        """``metadata.namespace`` ("" when unset)."""
        return str(self.metadata.get("namespace", ""))

    def to_wire(self) -> dict[str, Any]:
        """Returns the object as Kubernetes JSON (aliases, no ``None`` fields)."""
        return self.model_dump(by_alias=True, exclude_none=True)


class ConditionStatus(StrEnum):
    """``metav1.ConditionStatus``."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


CONDITION_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
"""``metav1.Condition``'s ``type`` pattern (a qualified name)."""
CONDITION_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
"""``metav1.Condition``'s ``reason`` pattern (CamelCase, commas and colons allowed)."""


class Condition(ApiModel):
    """A ``metav1.Condition``: one aspect of an object's state, with when it last changed."""

    type: Annotated[str, CrdField({"maxLength": 316, "pattern": CONDITION_TYPE_PATTERN})]
    status: ConditionStatus
    reason: Annotated[
        str, CrdField({"minLength": 1, "maxLength": 1024, "pattern": CONDITION_REASON_PATTERN})
    ]
    message: Annotated[str, CrdField({"maxLength": 32768})]
    last_transition_time: Time
    observed_generation: Annotated[Int64, CrdField({"minimum": 0})] | None = None


def format_time(moment: datetime) -> str:
    """Formats ``moment`` as Kubernetes does for ``metav1.Time``: UTC, seconds, ``Z`` suffix."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime:
    """Parses an RFC 3339 timestamp (``Z`` or an offset) into an aware ``datetime``."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
