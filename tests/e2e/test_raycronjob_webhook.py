"""The embedded plane calls rayop's RayCronJob webhook: an unparsable schedule is refused at
admission with the API server's usual webhook error, and a valid RayCronJob is admitted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.raycronjob.reconciler import RAY_CRON_JOBS
from rayop.controllers.webhooks.serving import WebhookSettings, serving
from rayop.kube.errors import Invalid
from rayop.testing import open_control_plane

CONTAINERS = {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}


def _cron(name: str, schedule: str) -> dict[str, Any]:
    template = {
        "entrypoint": "python x.py",
        "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {}, "template": CONTAINERS}},
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": name},
        "spec": {"schedule": schedule, "jobTemplate": template},
    }


async def test_a_bad_schedule_is_refused_at_admission(tmp_path: Path) -> None:
    settings = WebhookSettings(
        host="127.0.0.1", port=0, cert_dir=tmp_path, register_url="https://127.0.0.1:0"
    )
    async with open_control_plane() as plane, serving(plane.client, FeatureGates(), settings):
        with pytest.raises(Invalid) as refused:
            await plane.client.create(RAY_CRON_JOBS, _cron("bad", "@daily 5"), namespace="default")
        assert refused.value.status["message"] == (
            'admission webhook "vraycronjob.kb.io" denied the request: RayCronJob.ray.io "bad" '
            "is invalid: spec: Invalid value: invalid cron schedule: unrecognized descriptor: "
            "@daily 5"
        )
        created = await plane.client.create(
            RAY_CRON_JOBS, _cron("good", "0 3 * * MON-FRI"), namespace="default"
        )
        assert created["spec"]["schedule"] == "0 3 * * MON-FRI"
