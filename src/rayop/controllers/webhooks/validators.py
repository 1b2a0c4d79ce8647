"""The validating webhook handlers of RayCluster, RayJob, RayService and RayCronJob.

KubeRay v1.7's webhooks refuse only what its metadata checks refuse (and duplicate worker group
names); issue 15 asks rayop to refuse at admission everything the reconcile-time check refuses,
so these handlers run the same :mod:`rayop.api.validation` checks and the operator's gate checks,
and answer as KubeRay's webhooks do: a ``422 Invalid`` Status whose message is
``<Kind>.ray.io "<name>" is invalid: <field>: Invalid value: ...`` with one cause per problem
(the metadata problem under ``metadata.name``, the others under ``spec``). KubeRay has no
RayCronJob webhook; rayop's refuses what its RayCronJob controller refuses (KubeRay's
``ValidateRayCronJobSpec``) and the gated fields of the template, at the path and under the
name kubebuilder would give it.

An update that leaves ``spec`` as it was is checked on its metadata only: the operator's own
finalizer and annotation updates of an object admitted before the webhook existed must never
be refused (that could leave a deletion stuck on a finalizer).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from rayop.api.validation import (
    Problem,
    Reason,
    validate_raycluster,
    validate_rayjob,
    validate_rayservice,
)
from rayop.api.validation.raycronjob import validate_raycronjob
from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.kit.gate_checks import (
    raycluster_gate_problems,
    rayjob_gate_problems,
    rayservice_gate_problems,
)
from rayop.runtime.serving.admission_server import AdmissionVerdict, Handler

__all__ = ["PATHS", "handlers", "invalid_status"]

PATHS: Final = {
    "RayCluster": "/validate-ray-io-v1-raycluster",
    "RayJob": "/validate-ray-io-v1-rayjob",
    "RayService": "/validate-ray-io-v1-rayservice",
    "RayCronJob": "/validate-ray-io-v1-raycronjob",
}
"""KubeRay's webhook path of each kind."""

_METADATA_REASONS: Final = (
    Reason.INVALID_RAYCLUSTER_METADATA,
    Reason.INVALID_RAYJOB_METADATA,
    Reason.INVALID_RAYSERVICE_METADATA,
)
_STATUS_REASONS: Final = (Reason.INVALID_RAYCLUSTER_STATUS, Reason.INVALID_RAYJOB_STATUS)

Validate = Callable[..., list[Problem]]
GateCheck = Callable[[Mapping[str, Any], FeatureGates], list[str]]


def _go_quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def invalid_status(kind: str, name: str, causes: list[tuple[str, str]]) -> dict[str, Any]:
    """Returns apimachinery's ``NewInvalid`` Status for ``kind``/``name`` with (field, body)
    causes, each body already in ``field.Error.ErrorBody`` form."""
    errors: list[str] = []
    for field_path, body in causes:
        text = f"{field_path}: {body}"
        if text not in errors:
            errors.append(text)
    aggregate = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"{kind}.ray.io {_go_quote(name)} is invalid: {aggregate}",
        "reason": "Invalid",
        "details": {
            "name": name,
            "group": "ray.io",
            "kind": kind,
            "causes": [
                {"reason": "FieldValueInvalid", "message": body, "field": field_path}
                for field_path, body in causes
            ],
        },
        "code": 422,
    }


def _causes(obj: Mapping[str, Any], problems: list[Problem]) -> list[tuple[str, str]]:
    name = str((obj.get("metadata") or {}).get("name") or "")
    causes = []
    for problem in problems:
        if problem.reason in _STATUS_REASONS:
            continue  # the status is not admitted through this resource
        if problem.reason in _METADATA_REASONS:
            causes.append(("metadata.name", f"Invalid value: {_go_quote(name)}: {problem}"))
        else:
            causes.append(("spec", f"Invalid value: {problem}"))
    return causes


def _duplicate_groups(obj: Mapping[str, Any]) -> list[tuple[str, str]]:
    """KubeRay's RayCluster webhook check: worker group names must be unique."""
    seen: set[str] = set()
    groups = (obj.get("spec") or {}).get("workerGroupSpecs") or []
    for i, group in enumerate(groups):
        name = str((group or {}).get("groupName") or "")
        if name in seen:
            value = json.dumps(group, separators=(",", ":"))
            return [
                (
                    f"spec.workerGroupSpecs[{i}]",
                    f"Invalid value: {value}: worker group names must be unique",
                )
            ]
        seen.add(name)
    return []


def _raycronjob_gate_problems(obj: Mapping[str, Any], gates: FeatureGates) -> list[str]:
    """The template's gated fields, checked as a RayJob's."""
    template = (obj.get("spec") or {}).get("jobTemplate") or {}
    return rayjob_gate_problems({"spec": template}, gates)


def _handler(kind: str, validate: Validate, gate_check: GateCheck, gates: FeatureGates) -> Handler:
    def decide(request: Mapping[str, Any]) -> AdmissionVerdict:
        if request.get("operation") not in ("CREATE", "UPDATE"):
            return AdmissionVerdict(allowed=True)
        obj = request.get("object") or {}
        old = request.get("oldObject") or {}
        spec_changed = request.get("operation") == "CREATE" or old.get("spec") != obj.get("spec")
        problems = validate(obj, gates=gates.by_name())
        if not spec_changed:
            problems = [p for p in problems if p.reason in _METADATA_REASONS]
        causes = _causes(obj, problems)
        if spec_changed:
            if kind == "RayCluster":
                causes = _duplicate_groups(obj) + causes
            causes += [("spec", f"Invalid value: {p}") for p in gate_check(obj, gates)]
        if not causes:
            return AdmissionVerdict(allowed=True)
        name = str((obj.get("metadata") or {}).get("name") or "")
        return AdmissionVerdict(allowed=False, status=invalid_status(kind, name, causes))

    return decide


def handlers(gates: FeatureGates) -> dict[str, Handler]:
    """Returns the webhook handlers by path, checking gated fields against ``gates``."""
    return {
        PATHS["RayCluster"]: _handler(
            "RayCluster", validate_raycluster, raycluster_gate_problems, gates
        ),
        PATHS["RayJob"]: _handler("RayJob", validate_rayjob, rayjob_gate_problems, gates),
        PATHS["RayService"]: _handler(
            "RayService", validate_rayservice, rayservice_gate_problems, gates
        ),
        PATHS["RayCronJob"]: _handler(
            "RayCronJob", validate_raycronjob, _raycronjob_gate_problems, gates
        ),
    }
