"""The simulated Ray dashboard on its own: Jobs API, Serve API, health, auth, submitter parsing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import WSMsgType, web
from aiohttp.test_utils import TestClient, TestServer

from rayop.sim.dashboard.head import DashboardConfig, SimDashboard
from rayop.sim.dashboard.jobs import entrypoint_exit_code
from rayop.sim.dashboard.submitter import parse_submitter, service_of
from rayop.testing import FakeClock

CONFIG = DashboardConfig(
    job_pending_seconds=1.0, job_run_seconds=5.0, job_stop_seconds=0.5, serve_deploy_seconds=2.0
)
JOB_KEYS = {
    "type",
    "job_id",
    "submission_id",
    "driver_info",
    "status",
    "entrypoint",
    "message",
    "error_type",
    "start_time",
    "end_time",
    "metadata",
    "runtime_env",
    "driver_agent_http_address",
    "driver_node_id",
    "driver_exit_code",
}


def make_dashboard(clock: FakeClock, token: str | None = None) -> SimDashboard:
    return SimDashboard(
        namespace="ns",
        cluster="rc",
        pod_name="rc-head-x",
        pod_uid="uid-1",
        pod_ip="10.1.0.5",
        token=token,
        config=CONFIG,
        clock=clock,
    )


async def serve(dash: SimDashboard) -> TestClient[web.Request, web.Application]:
    async def handler(request: web.Request) -> web.StreamResponse:
        return await dash.handle(request.match_info["kind"], request.match_info["tail"], request)

    app = web.Application()
    app.router.add_route("*", "/{kind}/{tail:.*}", handler)
    client = TestClient(TestServer(app))
    await client.start_server()
    return client


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def http(clock: FakeClock) -> AsyncIterator[tuple[SimDashboard, TestClient[Any, Any]]]:
    dash = make_dashboard(clock)
    client = await serve(dash)
    yield dash, client
    await client.close()


async def get_json(client: TestClient[Any, Any], path: str) -> Any:
    resp = await client.get(path)
    assert resp.status == 200, await resp.text()
    return await resp.json()


async def test_job_goes_pending_running_succeeded_with_timestamps(
    http: Any, clock: FakeClock
) -> None:
    _, client = http
    resp = await client.post(
        "/dashboard/api/jobs/", json={"entrypoint": "python main.py", "submission_id": "job-1"}
    )
    assert await resp.json() == {"job_id": "job-1", "submission_id": "job-1"}
    info = await get_json(client, "/dashboard/api/jobs/job-1")
    assert set(info) == JOB_KEYS
    assert info["status"] == "PENDING" and info["message"] == "Job has not started yet."
    assert info["start_time"] == int(clock.time() * 1000) and info["end_time"] is None
    assert info["driver_agent_http_address"] is None
    clock.step(1.0)
    info = await get_json(client, "/dashboard/api/jobs/job-1")
    assert info["status"] == "RUNNING" and info["message"] == "Job is currently running."
    assert info["driver_agent_http_address"] == "http://10.1.0.5:52365"
    assert len(info["driver_node_id"]) == 56 and info["driver_info"]["pid"].isdigit()
    # Once the driver connected, the Ray job id finds the job too.
    assert (await get_json(client, f"/dashboard/api/jobs/{info['job_id']}"))[
        "submission_id"
    ] == "job-1"
    clock.step(5.0)
    info = await get_json(client, "/dashboard/api/jobs/job-1")
    assert info["status"] == "SUCCEEDED" and info["message"] == "Job finished successfully."
    assert info["driver_exit_code"] == 0 and info["error_type"] is None
    assert isinstance(info["end_time"], int) and info["end_time"] - info["start_time"] == 6000


async def test_failing_entrypoint_fails_with_exit_code(http: Any, clock: FakeClock) -> None:
    _, client = http
    entry = 'python -c "import sys; sys.exit(1)"'
    await client.post("/dashboard/api/jobs/", json={"entrypoint": entry, "submission_id": "bad"})
    clock.step(6.0)
    info = await get_json(client, "/dashboard/api/jobs/bad")
    assert info["status"] == "FAILED" and info["error_type"] == "JOB_ENTRYPOINT_COMMAND_ERROR"
    assert info["driver_exit_code"] == 1
    assert info["message"].startswith(
        "Job entrypoint command failed with exit code 1, last available"
    )


@pytest.mark.parametrize(
    ("entrypoint", "code"),
    [
        ("python main.py", 0),
        ('python -c "import sys; sys.exit(3)"', 3),
        ("bash -c 'exit 2'", 2),
        ("false", 1),
        ("echo hi", 0),
    ],
)
def test_entrypoint_exit_codes(entrypoint: str, code: int) -> None:
    assert entrypoint_exit_code(entrypoint) == code


async def test_submit_validation_and_duplicates(http: Any) -> None:
    _, client = http
    ok = await client.post("/dashboard/api/jobs/", json={"entrypoint": "echo", "metadata": None})
    sid = (await ok.json())["submission_id"]
    assert sid.startswith("raysubmit_") and len(sid) == len("raysubmit_") + 16
    dup = await client.post(
        "/dashboard/api/jobs/", json={"entrypoint": "echo", "submission_id": sid}
    )
    assert dup.status == 500 and "Please use a different submission_id" in await dup.text()
    unknown = await client.post("/dashboard/api/jobs/", json={"entrypoint": "e", "bogus": 1})
    assert unknown.status == 400
    assert (await unknown.text()).endswith(
        "TypeError: JobSubmitRequest.__init__() got an unexpected keyword argument 'bogus'"
    )
    bad_meta = await client.post(
        "/dashboard/api/jobs/", json={"entrypoint": "e", "metadata": {"a": 1}}
    )
    assert bad_meta.status == 400 and "metadata values must be strings" in await bad_meta.text()
    missing = await client.post("/dashboard/api/jobs/", json={})
    assert missing.status == 400 and "'entrypoint'" in await missing.text()
    not_json = await client.post("/dashboard/api/jobs/", data=b"{nope")
    assert not_json.status == 500


async def test_unknown_job_answers_404_text_everywhere(http: Any) -> None:
    _, client = http
    for method, path in (("GET", "x"), ("GET", "x/logs"), ("POST", "x/stop"), ("DELETE", "x")):
        resp = await client.request(method, f"/dashboard/api/jobs/{path}")
        assert resp.status == 404
        assert await resp.text() == "Job x does not exist"
        assert resp.content_type == "text/plain"
    assert (await client.get("/dashboard/api/nothing")).status == 404
    assert await get_json(client, "/dashboard/api/jobs/") == []


async def test_stop_logs_list_and_delete(http: Any, clock: FakeClock) -> None:
    _, client = http
    await client.post(
        "/dashboard/api/jobs/", json={"entrypoint": "python a.py", "submission_id": "a"}
    )
    assert (await get_json(client, "/dashboard/api/jobs/a/logs")) == {"logs": ""}
    clock.step(1.0)
    assert "python a.py" in (await get_json(client, "/dashboard/api/jobs/a/logs"))["logs"]
    refused = await client.delete("/dashboard/api/jobs/a")
    assert refused.status == 500 and "non-terminal state RUNNING" in await refused.text()
    stop = await client.post("/dashboard/api/jobs/a/stop")
    assert await stop.json() == {"stopped": True}
    clock.step(0.5)
    info = await get_json(client, "/dashboard/api/jobs/a")
    assert info["status"] == "STOPPED" and info["message"] == "Job was intentionally stopped."
    assert info["driver_exit_code"] is None and info["end_time"] is not None
    assert await (await client.post("/dashboard/api/jobs/a/stop")).json() == {"stopped": False}
    assert [j["submission_id"] for j in await get_json(client, "/dashboard/api/jobs/")] == ["a"]
    assert await (await client.delete("/dashboard/api/jobs/a")).json() == {"deleted": True}
    assert (await client.get("/dashboard/api/jobs/a")).status == 404


async def test_ray_job_submit_endpoints_page_packages_and_log_tail(
    http: Any, clock: FakeClock
) -> None:
    dash, client = http
    page = await client.get("/dashboard/")
    assert page.status == 200 and "rc-head-x" in await page.text()
    package = "/dashboard/api/packages/gcs/_ray_pkg_abc.zip"
    missing = await client.get(package)
    assert missing.status == 404
    assert await missing.text() == "Package gcs://_ray_pkg_abc.zip does not exist"
    assert (await client.put(package, data=b"PK\x05\x06")).status == 200
    assert (await client.get(package)).status == 200
    assert dash.cli.packages == {"gcs://_ray_pkg_abc.zip": b"PK\x05\x06"}
    assert (await client.get("/dashboard/api/jobs/nope/logs/tail")).status == 404
    await client.post(
        "/dashboard/api/jobs/", json={"entrypoint": "python a.py", "submission_id": "a"}
    )
    ws = await client.ws_connect("/dashboard/api/jobs/a/logs/tail")
    clock.step(1.0)  # the driver starts: its first line arrives
    first = await ws.receive_str(timeout=5)
    assert first == "Running entrypoint for job a: python a.py\n"
    clock.step(5.0)  # the job ends: the rest arrives, then the server closes
    assert await ws.receive_str(timeout=5) == "Simulated entrypoint finished.\n"
    closing = await ws.receive(timeout=5)
    assert closing.type in (WSMsgType.CLOSE, WSMsgType.CLOSED)
    await ws.close()


async def test_serve_applications_deploy_then_run(http: Any, clock: FakeClock) -> None:
    _, client = http
    assert (await client.get("/serve/-/healthz")).status == 503
    assert await get_json(client, "/dashboard/api/serve/applications/?api_type=declarative") == {
        "controller_info": {},
        "proxies": {},
        "applications": {},
        "target_capacity": None,
    }
    config = {
        "applications": [
            {
                "name": "fruit",
                "import_path": "fruit.deployment_graph",
                "route_prefix": "/fruit",
                "deployments": [{"name": "MangoStand", "num_replicas": 2}, {"name": "FruitMarket"}],
            },
            {"name": "calc", "import_path": "conditional_dag.serve_dag", "route_prefix": "/calc"},
        ],
        "target_capacity": 50,
    }
    put = await client.put("/dashboard/api/serve/applications/", json=config)
    assert put.status == 200 and await put.read() == b""
    body = await get_json(client, "/dashboard/api/serve/applications/?api_type=declarative")
    fruit = body["applications"]["fruit"]
    assert (
        fruit["status"] == "DEPLOYING"
        and fruit["deployments"]["MangoStand"]["status"] == "UPDATING"
    )
    assert fruit["deployments"]["MangoStand"]["target_num_replicas"] == 1
    assert (
        body["target_capacity"] == 50.0
        and body["controller_info"]["actor_name"] == "SERVE_CONTROLLER_ACTOR"
    )
    assert (await client.get("/serve/-/healthz")).status == 200
    clock.step(2.0)
    body = await get_json(client, "/dashboard/api/serve/applications/?api_type=declarative")
    assert {n: a["status"] for n, a in body["applications"].items()} == {
        "fruit": "RUNNING",
        "calc": "RUNNING",
    }
    assert body["applications"]["fruit"]["deployments"]["FruitMarket"]["status"] == "HEALTHY"
    assert body["applications"]["fruit"]["route_prefix"] == "/fruit"
    imperative = await get_json(client, "/dashboard/api/serve/applications/?api_type=imperative")
    assert imperative["applications"] == {}
    assert (await client.get("/serve/fruit/x")).status == 200
    # A changed application redeploys; the unchanged one keeps running.
    config["applications"][1]["args"] = {"v": 2}  # type: ignore[index]
    config.pop("target_capacity")
    await client.put("/dashboard/api/serve/applications/", json=config)
    # The capacity change redeploys everything.
    body = await get_json(client, "/dashboard/api/serve/applications/")
    assert body["applications"]["calc"]["status"] == "DEPLOYING"
    assert (await client.delete("/dashboard/api/serve/applications/")).status == 200
    assert (await get_json(client, "/dashboard/api/serve/applications/"))["applications"] == {}


async def test_serve_put_validation_and_api_type(http: Any) -> None:
    _, client = http
    bad = await client.get("/dashboard/api/serve/applications/?api_type=Bogus")
    assert bad.status == 400 and "Invalid 'api_type' value: 'Bogus'" in await bad.text()
    dup = {
        "applications": [
            {"name": "a", "import_path": "m:a"},
            {"name": "a", "import_path": "m:b", "route_prefix": "/b"},
        ]
    }
    resp = await client.put("/dashboard/api/serve/applications/", json=dup)
    assert resp.status == 400 and 'Found multiple configs for application "a"' in await resp.text()
    assert (await client.put("/dashboard/api/serve/applications/", json={})).status == 400
    no_import = {"applications": [{"name": "a"}]}
    assert (await client.put("/dashboard/api/serve/applications/", json=no_import)).status == 400


async def test_forced_app_status_and_injected_faults(http: Any, clock: FakeClock) -> None:
    dash, client = http
    await client.put(
        "/dashboard/api/serve/applications/",
        json={"applications": [{"name": "a", "import_path": "m:a"}]},
    )
    dash.serve.force_status("a", "DEPLOY_FAILED", "Deploying app 'a' failed")
    clock.step(10)
    app = (await get_json(client, "/dashboard/api/serve/applications/"))["applications"]["a"]
    assert app["status"] == "DEPLOY_FAILED" and app["message"] == "Deploying app 'a' failed"
    dash.faults.errors["get_serve"] = 503
    resp = await client.get("/dashboard/api/serve/applications/")
    assert resp.status == 503 and "GCS may be down" in await resp.text()
    dash.faults.errors["get_job"] = 500
    assert (await client.get("/dashboard/api/jobs/anything")).status == 500


async def test_injected_answers_replace_the_body_and_act_on_nothing(http: Any) -> None:
    dash, client = http
    dash.faults.answers["get_serve"] = '{"applications": 5'
    resp = await client.get("/dashboard/api/serve/applications/")
    assert resp.status == 200 and resp.content_type == "application/json"
    assert await resp.text() == '{"applications": 5'
    dash.faults.answers["*"] = '{"submission_id": ["x"]}'
    resp = await client.post("/dashboard/api/jobs/", json={"entrypoint": "echo hi"})
    assert await resp.text() == '{"submission_id": ["x"]}'
    assert dash.jobs.submissions == 0, "an injected answer submits nothing"
    dash.faults.answers.clear()
    resp = await client.post("/dashboard/api/jobs/", json={"entrypoint": "echo hi"})
    assert resp.status == 200 and dash.jobs.submissions == 1


async def test_health_and_version(http: Any) -> None:
    dash, client = http
    resp = await client.get("/dashboard/api/gcs_healthz")
    assert resp.status == 200 and await resp.text() == "success"
    assert (await client.get("/agent/api/healthz")).status == 200
    assert (await client.get("/dashboard/api/local_raylet_healthz")).status == 200
    version = await get_json(client, "/dashboard/api/version")
    assert version["version"] == "4" and version["ray_version"] == "2.60.0"
    dash.faults.gcs_healthy = False
    assert (await client.get("/dashboard/api/gcs_healthz")).status == 503


async def test_token_auth(clock: FakeClock) -> None:
    client = await serve(make_dashboard(clock, token="s3cret"))
    try:
        missing = await client.get("/dashboard/api/jobs/")
        assert missing.status == 401
        assert await missing.text() == "Unauthorized: Missing authentication token"
        wrong = await client.get(
            "/dashboard/api/jobs/", headers={"x-ray-authorization": "Bearer no"}
        )
        assert (
            wrong.status == 403 and await wrong.text() == "Forbidden: Invalid authentication token"
        )
        bare = await client.get("/dashboard/api/version", headers={"x-ray-authorization": "s3cret"})
        assert bare.status == 403
        ok = await client.get(
            "/dashboard/api/jobs/", headers={"x-ray-authorization": "Bearer s3cret"}
        )
        assert ok.status == 200
        assert (await client.get("/dashboard/api/gcs_healthz")).status == 200
    finally:
        await client.close()


KUBERAY_SCRIPT = (
    'until python -c "import urllib.request; print(urllib.request.urlopen('
    "'http://rj-head-svc.team.svc.cluster.local:8265/api/gcs_healthz', timeout=10).read())\" "
    "| grep -q success; do echo Waiting; sleep 2; done ; "
    "if ! ray job status --address http://rj-head-svc.team.svc.cluster.local:8265 rj-abc "
    ">/dev/null 2>&1 ; then ray job submit --address http://rj-head-svc.team.svc.cluster.local:8265 "
    '--no-wait --runtime-env-json \'{"pip":["requests"]}\' --metadata-json \'{"owner":"me"}\' '
    "--submission-id rj-abc --entrypoint-num-cpus 0.500000 -- "
    'python -c "import sys; sys.exit(1)" ; fi ; '
    "ray job logs --address http://rj-head-svc.team.svc.cluster.local:8265 --follow rj-abc"
)


def test_parse_kuberay_submitter_command() -> None:
    pod = {
        "spec": {
            "containers": [
                {
                    "name": "ray-job-submitter",
                    "command": ["/bin/bash", "-ce", "--"],
                    "args": [KUBERAY_SCRIPT],
                }
            ]
        }
    }
    cmd = parse_submitter(pod)
    assert cmd is not None
    assert cmd.address == "http://rj-head-svc.team.svc.cluster.local:8265"
    assert cmd.submission_id == "rj-abc" and cmd.no_wait and cmd.guarded
    assert entrypoint_exit_code(cmd.entrypoint) == 1
    assert cmd.body["runtime_env"] == {"pip": ["requests"]} and cmd.body["metadata"] == {
        "owner": "me"
    }
    assert cmd.body["entrypoint_num_cpus"] == 0.5
    assert json.loads(json.dumps(cmd.body))["submission_id"] == "rj-abc"
    assert service_of(cmd.address, "default") == ("team", "rj-head-svc")
    assert service_of("rj-head-svc:8265", "default") == ("default", "rj-head-svc")
    assert (
        parse_submitter({"spec": {"containers": [{"name": "c", "command": ["sleep", "1"]}]}})
        is None
    )
