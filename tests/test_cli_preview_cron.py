"""``rayop preview`` of RayCronJobs (with the RayCronJob gate on): what the next tick creates.

On the embedded plane: a yearly RayCronJob previews as nothing now and names its next tick, the
RayJob it creates then and that RayJob's cluster; one whose tick is due previews as the RayJob
its pass creates; a suspended one says so; one the controller refuses is named with KubeRay's
message. With the gate off RayCronJobs are not looked at (as the operator does not reconcile
them), and ``-f`` previews a RayCronJob from a file.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from rayop.api.common import format_time
from rayop.controllers.raycronjob.reconciler import RAY_CRON_JOBS
from rayop.examples import sample_text
from rayop.kube.resources import RAY_JOBS
from rayop.testing import PlaneUnderTest, open_control_plane

NS = "crons"


async def _preview(plane: PlaneUnderTest, *args: str) -> tuple[int, Any, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rayop", "preview", "--kubeconfig", plane.cp.kubeconfig_path,
        "-o", "json", "--timeout", "30", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=os.environ,
    )  # fmt: skip
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, json.loads(out), err.decode()


def _cron(name: str, schedule: str, **spec: Any) -> dict[str, Any]:
    (job,) = [d for d in yaml.safe_load_all(sample_text("rayjob")) if d and d["kind"] == "RayJob"]
    template = copy.deepcopy(job["spec"])
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"schedule": schedule, "timeZone": "UTC", "jobTemplate": template, **spec},
    }


async def test_preview_names_the_next_tick_and_what_it_creates(tmp_path: Path) -> None:
    async with open_control_plane() as plane:
        await plane.namespace(NS)
        await plane.create(RAY_CRON_JOBS, _cron("yearly", "0 0 1 1 *"), NS)
        due = await plane.create(RAY_CRON_JOBS, _cron("due", "*/5 * * * *"), NS)
        ten_ago = datetime.now(UTC) - timedelta(minutes=10)
        due["status"] = {"lastScheduleTime": format_time(ten_ago)}
        await plane.client.update_status(RAY_CRON_JOBS, due)
        await plane.create(RAY_CRON_JOBS, _cron("paused", "0 0 1 1 *", suspend=True), NS)
        await plane.create(RAY_CRON_JOBS, _cron("bad", "CRON_TZ=UTC 0 0 1 1 *"), NS)

        code, report, err = await _preview(plane, "-n", NS, "--feature-gates", "RayCronJob=true")
        jobs_after = plane.objects(RAY_JOBS, NS)
        off_code, off, _ = await _preview(plane, "-n", NS)

        fresh = _cron("fresh", "0 0 1 1 *")
        path = tmp_path / "cron.yaml"
        path.write_text(yaml.safe_dump(fresh))
        file_code, from_file, file_err = await _preview(
            plane, "-f", str(path), "--feature-gates", "RayCronJob=true"
        )
    assert jobs_after == [], "preview created a RayJob"
    verdicts = {v["name"]: v for v in report["objects"]}
    assert code == 2, (report, err)  # the refused one
    year = datetime.now(UTC).year + 1
    yearly = verdicts["yearly"]
    assert yearly["verdict"] == "nothing", yearly
    (line,) = yearly["effects"]
    assert line.startswith(f"next tick {year}-01-01T00:00:00Z (in "), line
    minutes = int(datetime(year, 1, 1, tzinfo=UTC).timestamp()) // 60
    assert f"create RayJob {NS}/yearly-{minutes}, its cluster 2 pods (head + 1 workers)" in line

    ran = verdicts["due"]
    assert ran["verdict"] == "job" and ran["disruptive"], ran
    assert ran["effects"][0].startswith(f"create RayJob {NS}/due-"), ran
    assert ran["effects"][1].startswith("next tick "), ran

    assert verdicts["paused"]["effects"] == [
        "suspended: no RayJob is created until spec.suspend is false"
    ], verdicts["paused"]
    bad = verdicts["bad"]
    assert bad["verdict"] == "refused", bad
    assert "cannot use TZ or CRON_TZ in schedule" in bad["effects"][0], bad

    assert off_code == 0 and off["objects"] == [], off  # gate off: not the operator's

    assert file_code == 0, (from_file, file_err)
    (new,) = from_file["objects"]
    assert new["effects"][0] == "not live: the file creates it", new
    assert new["effects"][1].startswith(f"next tick {year}-01-01T00:00:00Z"), new
