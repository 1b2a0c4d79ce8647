"""rayop's RayCronJob webhook refuses at admission what the controller refuses at reconcile."""

from __future__ import annotations

from typing import Any

from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.webhooks.validators import PATHS, handlers
from rayop.runtime.serving.admission_server import AdmissionVerdict

from .cron_world import raycronjob, utc


def _review(obj: dict[str, Any], operation: str = "CREATE", old: Any = None) -> AdmissionVerdict:
    request = {"uid": "u", "operation": operation, "object": obj, "oldObject": old}
    return handlers(FeatureGates())[PATHS["RayCronJob"]](request)


def test_a_valid_raycronjob_is_allowed() -> None:
    assert _review(raycronjob("@every 1h", utc(2026, 1, 1))).allowed


def test_a_bad_schedule_is_refused_with_the_controllers_message() -> None:
    verdict = _review(raycronjob("* * *", utc(2026, 1, 1)))
    assert not verdict.allowed and verdict.status is not None
    assert verdict.status["code"] == 422
    assert verdict.status["message"] == (
        'RayCronJob.ray.io "nightly" is invalid: spec: Invalid value: invalid cron schedule: '
        "expected exactly 5 fields, found 3: [* * *]"
    )


def test_a_template_using_a_gated_field_is_refused_naming_the_gate() -> None:
    obj = raycronjob("@hourly", utc(2026, 1, 1))
    obj["spec"]["jobTemplate"]["rayClusterSpec"]["networkPolicy"] = {"mode": "DenyAll"}
    verdict = _review(obj)
    assert verdict.status is not None and "RayClusterNetworkPolicy" in verdict.status["message"]


def test_an_update_leaving_the_spec_alone_is_allowed() -> None:
    obj = raycronjob("bad", utc(2026, 1, 1))
    assert _review(obj, "UPDATE", old=obj).allowed
