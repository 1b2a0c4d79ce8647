"""The dashboard client against the simulated dashboards of the embedded control plane.

A head pod and head service are created by hand (no operator), so these tests cover the
client, the services proxy route to the head's dashboard, and the simulated submitter pods.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from rayop.controllers.dashboard.client import (
    AUTH_HEADER,
    DIRECT_TIMEOUT,
    PROXY_TIMEOUT,
    DashboardAuthError,
    DashboardClient,
    DashboardDecodeError,
    DashboardError,
    DashboardRequest,
    DashboardTimeout,
    DashboardUnavailable,
    JobNotFound,
    SubmissionIdConflict,
)
from rayop.controllers.dashboard.models import JobInfo, JobSubmitRequest, ServeDetails
from rayop.kube.client import KubeClient
from rayop.kube.config import load_config
from rayop.kube.resources import JOBS, PODS, SECRETS, SERVICES
from rayop.sim.controlplane import EmbeddedControlPlane
from rayop.sim.dashboard.head import DashboardConfig
from rayop.sim.dashboard.registry import DELAY_ANNOTATION
from rayop.sim.nodes.kubelet import KubeletConfig
from rayop.testing import eventually

NS = "default"
DASH = DashboardConfig(
    job_pending_seconds=0.05,
    job_run_seconds=0.3,
    job_stop_seconds=0.05,
    serve_deploy_seconds=0.2,
    submitter_poll_seconds=0.05,
)


@pytest.fixture
async def cp() -> AsyncIterator[EmbeddedControlPlane]:
    kubelet = KubeletConfig(running_delay=0.01, ready_delay=0.01, job_duration=0.05)
    async with EmbeddedControlPlane(kubelet=kubelet, dashboard=DASH) as plane:
        yield plane


@pytest.fixture
async def kube(cp: EmbeddedControlPlane) -> AsyncIterator[KubeClient]:
    config = await load_config(kubeconfig=cp.kubeconfig_path)
    async with KubeClient(config, qps=-1) as client:
        yield client


async def wait_until(
    cp: EmbeddedControlPlane, check: Callable[[], bool], timeout: float = 10.0
) -> None:
    """Blocks until ``check()`` holds, re-evaluated on every store change."""
    changed = asyncio.Event()
    unsubscribe = cp.store.subscribe(lambda *_: changed.set())
    try:
        async with asyncio.timeout(timeout):
            while not check():
                await changed.wait()
                changed.clear()
    finally:
        unsubscribe()


async def wait_job(
    client: DashboardClient, job_id: str, status: str, timeout: float = 10.0
) -> JobInfo:
    """Polls the job until it has ``status`` (its transitions are time-driven)."""
    seen: list[JobInfo] = []

    async def has_status() -> bool:
        seen.append(await client.get_job_info(job_id))
        return seen[-1].status == status

    await eventually(has_status, timeout=timeout, what=f"job {job_id} {status}")
    return seen[-1]


def head_objects(
    cluster: str, env: list[dict[str, Any]] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    labels = {
        "ray.io/cluster": cluster,
        "ray.io/node-type": "head",
        "ray.io/identifier": f"{cluster}-head",
    }
    pod = {
        "metadata": {"generateName": f"{cluster}-head-", "labels": labels},
        "spec": {
            "containers": [
                {
                    "name": "ray-head",
                    "image": "rayproject/ray:2.46.0",
                    "env": env or [],
                    "ports": [
                        {"name": "dashboard", "containerPort": 8265},
                        {"name": "serve", "containerPort": 8000},
                    ],
                }
            ]
        },
    }
    svc = {
        "metadata": {"name": f"{cluster}-head-svc", "labels": labels},
        "spec": {
            "clusterIP": "None",
            "selector": labels,
            "ports": [
                {"name": "dashboard", "port": 8265, "targetPort": 8265},
                {"name": "serve", "port": 8000, "targetPort": 8000},
                {"name": "client", "port": 10001, "targetPort": 10001},
            ],
        },
    }
    return pod, svc


async def make_head(
    cp: EmbeddedControlPlane,
    kube: KubeClient,
    cluster: str,
    env: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    pod, svc = head_objects(cluster, env)
    if peek(cp, "", "services", svc["metadata"]["name"]) is None:
        await kube.create(SERVICES, svc, namespace=NS)
    created = await kube.create(PODS, pod, namespace=NS)
    uid = created["metadata"]["uid"]
    await wait_until(cp, lambda: cp.dashboards.for_pod(NS, uid) is not None)
    return created


def proxy_client(kube: KubeClient, cluster: str, **kw: Any) -> DashboardClient:
    return DashboardClient.via_proxy(kube, namespace=NS, service=f"{cluster}-head-svc", **kw)


def submitter_job(name: str, cluster: str, entrypoint: str) -> dict[str, Any]:
    address = f"http://{cluster}-head-svc.{NS}.svc.cluster.local:8265"
    script = (
        f"until python -c \"import urllib.request; urllib.request.urlopen('{address}/api/gcs_healthz')\"; "
        f"do echo Waiting; sleep 2; done ; "
        f"if ! ray job status --address {address} {name} >/dev/null 2>&1 ; then "
        f"ray job submit --address {address} --no-wait --submission-id {name} -- {entrypoint} ; fi ; "
        f"ray job logs --address {address} --follow {name}"
    )
    container = {
        "name": "ray-job-submitter",
        "image": "rayproject/ray:2.46.0",
        "command": ["/bin/bash", "-ce", "--"],
        "args": [script],
        "env": [
            {"name": "RAY_DASHBOARD_ADDRESS", "value": address[7:]},
            {"name": "RAY_JOB_SUBMISSION_ID", "value": name},
        ],
    }
    return {
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": 2,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        },
    }


def peek(cp: EmbeddedControlPlane, group: str, plural: str, name: str) -> dict[str, Any] | None:
    info = cp.store.resources.get(group, "v1", plural)
    assert info is not None
    return cp.store.peek(info, NS, name)


def job_condition(cp: EmbeddedControlPlane, name: str) -> str | None:
    job = peek(cp, "batch", "jobs", name)
    for cond in ((job or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return None


async def test_jobs_through_the_services_proxy(cp: EmbeddedControlPlane, kube: KubeClient) -> None:
    await make_head(cp, kube, "rc")
    client = proxy_client(kube, "rc")
    assert client.transport.timeout == PROXY_TIMEOUT
    with pytest.raises(JobNotFound):
        await client.get_job_info("nope")
    sid = await client.submit_job(
        JobSubmitRequest(
            entrypoint="python main.py",
            submission_id="j1",
            metadata={"k": "v"},
            entrypoint_num_cpus=0.5,
        )
    )
    assert sid == "j1"
    with pytest.raises(SubmissionIdConflict) as dup:
        await client.submit_job(JobSubmitRequest(entrypoint="python main.py", submission_id="j1"))
    assert dup.value.submission_id == "j1"
    info = await client.get_job_info("j1")
    assert (
        info.status in ("PENDING", "RUNNING")
        and info.start_time > 0
        and info.metadata == {"k": "v"}
    )
    done = await wait_job(client, "j1", "SUCCEEDED")
    assert (
        done.end_time >= done.start_time
        and done.terminal
        and done.message == "Job finished successfully."
    )
    assert [j.submission_id for j in await client.list_jobs()] == ["j1"]
    assert "python main.py" in (await client.get_job_log("j1") or "")
    assert await client.get_job_log("nope") is None
    await client.delete_job("j1")
    assert await client.list_jobs() == []
    assert (await client.get_version())["version"] == "4"
    assert await client.check_gcs_health()


async def test_failing_entrypoint_and_stop(cp: EmbeddedControlPlane, kube: KubeClient) -> None:
    await make_head(cp, kube, "rc")
    client = proxy_client(kube, "rc")
    await client.submit_job(
        JobSubmitRequest(entrypoint='python -c "import sys; sys.exit(1)"', submission_id="bad")
    )
    failed = await wait_job(client, "bad", "FAILED")
    assert failed.error_type == "JOB_ENTRYPOINT_COMMAND_ERROR" and failed.driver_exit_code == 1
    assert await client.stop_job("bad") is False  # already finished: not an error
    dash = cp.dashboards.for_cluster(NS, "rc")
    assert dash is not None
    await client.submit_job(JobSubmitRequest(entrypoint="python long.py", submission_id="long"))
    assert await client.stop_job("long") is True
    await wait_job(client, "long", "STOPPED")
    dash.faults.errors["delete_job"] = 500
    with pytest.raises(DashboardError) as failed_delete:
        await client.delete_job("long")
    assert failed_delete.value.status == 500


async def test_direct_mode_and_serve(cp: EmbeddedControlPlane, kube: KubeClient) -> None:
    await make_head(cp, kube, "svc")
    dash = cp.dashboards.for_cluster(NS, "svc")
    assert dash is not None
    async with DashboardClient.direct(cp.dashboards.base_url(dash)) as client:
        assert client.transport.timeout == DIRECT_TIMEOUT
        details = await client.get_serve_details()
        assert details.applications == {} and not details.all_running
        # Before the first PUT nothing listens on the Serve port.
        with pytest.raises(DashboardUnavailable):
            await proxy_client(kube, "svc", port="serve").check_serve_health()
        config = {
            "applications": [
                {
                    "name": "fruit",
                    "import_path": "fruit.deployment_graph",
                    "route_prefix": "/fruit",
                    "deployments": [{"name": "MangoStand"}, {"name": "FruitMarket"}],
                }
            ]
        }
        await client.update_deployments(config)
        first = await client.get_multi_application_status()
        assert first["fruit"].status == "DEPLOYING"
        with pytest.raises(DashboardError) as bad:
            await client.update_deployments({"applications": [{"name": "x"}]})
        assert bad.value.status == 400
    serve = proxy_client(kube, "svc", port="serve")
    await serve.check_serve_health()
    via_proxy = proxy_client(kube, "svc")
    seen: list[ServeDetails] = []

    async def all_running() -> bool:
        seen.append(await via_proxy.get_serve_details())
        return seen[-1].all_running

    await eventually(all_running, timeout=10, what="every Serve application RUNNING")
    fruit = seen[-1].applications["fruit"]
    assert fruit.route_prefix == "/fruit"
    assert {n: d.status for n, d in fruit.deployments.items()} == {
        "MangoStand": "HEALTHY",
        "FruitMarket": "HEALTHY",
    }


async def test_new_head_starts_with_fresh_state(cp: EmbeddedControlPlane, kube: KubeClient) -> None:
    head = await make_head(cp, kube, "rc")
    client = proxy_client(kube, "rc")
    await client.submit_job(JobSubmitRequest(entrypoint="python a.py", submission_id="a"))
    await kube.delete(PODS, head["metadata"]["name"], namespace=NS, grace_period_seconds=0)
    await wait_until(cp, lambda: cp.dashboards.for_cluster(NS, "rc") is None)
    with pytest.raises(DashboardUnavailable):
        await client.get_job_info("a")
    await make_head(cp, kube, "rc")
    with pytest.raises(JobNotFound):
        await client.get_job_info("a")


async def test_submitter_job_pod_submits_and_follows(
    cp: EmbeddedControlPlane, kube: KubeClient
) -> None:
    await kube.create(
        JOBS, submitter_job("ok-job", "rc", "python /home/ray/samples/sample_code.py"), namespace=NS
    )
    await kube.create(
        JOBS, submitter_job("bad-job", "rc", 'python -c "import sys; sys.exit(1)"'), namespace=NS
    )
    # The submitter pods wait for the head, as KubeRay's script waits for gcs_healthz.
    await make_head(cp, kube, "rc")
    await wait_until(
        cp,
        lambda: (
            job_condition(cp, "ok-job") is not None and job_condition(cp, "bad-job") is not None
        ),
    )
    # `ray job logs --follow` exits 0 whatever the Ray job's outcome.
    assert job_condition(cp, "ok-job") == "Complete" and job_condition(cp, "bad-job") == "Complete"
    client = proxy_client(kube, "rc")
    assert (await client.get_job_info("ok-job")).status == "SUCCEEDED"
    assert (await client.get_job_info("bad-job")).status == "FAILED"
    assert sorted(r.submission_id for r in cp.dashboards.submissions) == ["bad-job", "ok-job"]


async def test_auth_token(cp: EmbeddedControlPlane, kube: KubeClient) -> None:
    token = "tok-123"
    secret = {
        "metadata": {"name": "rc-auth"},
        "data": {"auth_token": base64.b64encode(token.encode()).decode()},
    }
    await kube.create(SECRETS, secret, namespace=NS)
    env: list[dict[str, Any]] = [
        {"name": "RAY_AUTH_MODE", "value": "token"},
        {
            "name": "RAY_AUTH_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": "rc-auth", "key": "auth_token"}},
        },
    ]
    await make_head(cp, kube, "rc", env=env)
    with pytest.raises(DashboardAuthError) as missing:
        await proxy_client(kube, "rc").list_jobs()
    assert missing.value.status == 401
    with pytest.raises(DashboardAuthError) as wrong:
        await proxy_client(kube, "rc", token="nope").list_jobs()
    assert wrong.value.status == 403
    assert await proxy_client(kube, "rc", token=token).list_jobs() == []
    assert await proxy_client(kube, "rc").check_gcs_health()  # public path


async def test_slow_dashboard_times_out(cp: EmbeddedControlPlane, kube: KubeClient) -> None:
    await make_head(cp, kube, "rc")
    dash = cp.dashboards.for_cluster(NS, "rc")
    assert dash is not None
    dash.faults.delay = 30.0
    loop = asyncio.get_running_loop()
    async with DashboardClient.direct(cp.dashboards.base_url(dash)) as direct:
        started = loop.time()
        with pytest.raises(DashboardTimeout):
            await direct.get_job_info("x")
        # Wide margins (a loaded machine): without the timeout the call would take 30 s.
        assert DIRECT_TIMEOUT <= loop.time() - started < DIRECT_TIMEOUT + 5.0
    started = loop.time()
    with pytest.raises(DashboardTimeout):
        await proxy_client(kube, "rc", timeout=0.5).get_serve_details()
    assert loop.time() - started < PROXY_TIMEOUT / 2  # the 0.5 s given, not the 10 s default


async def test_a_head_annotated_with_a_delay_answers_that_late(
    cp: EmbeddedControlPlane, kube: KubeClient
) -> None:
    """``sim.rayop/dashboard-delay`` on the head pod (as a plane in another process is told)
    slows its dashboard from the start, and a later patch of it changes the delay."""
    pod, svc = head_objects("slow")
    pod["metadata"]["annotations"] = {DELAY_ANNOTATION: "30"}
    await kube.create(SERVICES, svc, namespace=NS)
    created = await kube.create(PODS, pod, namespace=NS)
    uid, name = created["metadata"]["uid"], created["metadata"]["name"]
    await wait_until(cp, lambda: cp.dashboards.for_pod(NS, uid) is not None)
    dash = cp.dashboards.for_pod(NS, uid)
    assert dash is not None and dash.faults.delay == 30.0
    async with DashboardClient.direct(cp.dashboards.base_url(dash), timeout=0.3) as direct:
        with pytest.raises(DashboardTimeout):
            await direct.get_job_info("x")
        patch = {"metadata": {"annotations": {DELAY_ANNOTATION: "0"}}}
        await kube.patch(PODS, name, patch, namespace=NS)
        await wait_until(cp, lambda: dash.faults.delay == 0.0)
        with pytest.raises(JobNotFound):
            await direct.get_job_info("x")
    assert cp.dashboards.for_pod(NS, uid) is dash  # the same head: its jobs are kept


async def test_service_without_ready_head_is_unavailable(
    cp: EmbeddedControlPlane, kube: KubeClient
) -> None:
    _, svc = head_objects("ghost")
    await kube.create(SERVICES, svc, namespace=NS)
    with pytest.raises(DashboardUnavailable) as err:
        await proxy_client(kube, "ghost").get_job_info("x")
    assert err.value.status == 503
    with pytest.raises(DashboardUnavailable):
        await proxy_client(kube, "missing-svc").get_job_info("x")


# -- answer mapping, on a scripted transport (no network, no waiting) --------------------------


class ScriptedTransport:
    """Answers each request with the next scripted (status, body); records the requests."""

    timeout = 2.0

    def __init__(self, *answers: tuple[int, bytes]) -> None:
        self.answers = list(answers)
        self.requests: list[DashboardRequest] = []

    async def send(self, request: DashboardRequest) -> tuple[int, bytes]:
        self.requests.append(request)
        return self.answers.pop(0)

    async def close(self) -> None:
        pass


def scripted(*answers: tuple[int, bytes], token: str | None = None) -> DashboardClient:
    return DashboardClient(ScriptedTransport(*answers), token=token)


JOB = b'{"status": "RUNNING", "submission_id": "j", "start_time": 5}'


async def test_a_2xx_answer_is_decoded_into_its_model() -> None:
    client = scripted((200, JOB), (200, b"[" + JOB + b"]"), (200, b'{"version": "4"}'))
    assert (await client.get_job_info("j")).start_time == 5
    assert [info.submission_id for info in await client.list_jobs()] == ["j"]
    assert await client.get_version() == {"version": "4"}


async def test_a_404_means_job_not_found_or_nothing_as_each_call_documents() -> None:
    missing = (404, b"no such job")
    with pytest.raises(JobNotFound) as raised:
        await scripted(missing).get_job_info("j")
    assert (raised.value.job_id, raised.value.body) == ("j", "no such job")
    with pytest.raises(JobNotFound):
        await scripted(missing).delete_job("j")
    assert await scripted(missing).list_jobs() == []
    assert await scripted(missing).get_job_log("j") is None
    with pytest.raises(DashboardError, match="GetServeDetails fail: 404"):
        await scripted(missing).get_serve_details()


async def test_gateway_errors_are_unavailable_and_other_errors_are_plain_failures() -> None:
    with pytest.raises(DashboardUnavailable, match="UpdateDeployments fail: 503 busy"):
        await scripted((503, b"busy")).update_deployments({})
    with pytest.raises(DashboardError, match="GetJobInfo fail: 500 boom") as raised:
        await scripted((500, b"boom")).get_job_info("j")
    assert not isinstance(raised.value, DashboardUnavailable)
    assert raised.value.status == 500


async def test_a_body_that_is_not_the_expected_json_is_a_decode_error() -> None:
    with pytest.raises(DashboardDecodeError, match="GetJobInfo fail: <html>") as raised:
        await scripted((200, b"<html>")).get_job_info("j")
    assert raised.value.body == "<html>"
    with pytest.raises(DashboardDecodeError, match="ListJobs fail: not a JSON array"):
        await scripted((200, b"{}")).list_jobs()
    with pytest.raises(DashboardDecodeError, match="GetVersion fail: not a JSON object"):
        await scripted((200, b"[]")).get_version()
    with pytest.raises(DashboardDecodeError, match="GetJobInfo fail: start_time must be"):
        await scripted((200, b'{"start_time": -1}')).get_job_info("j")


async def test_requests_carry_the_token_and_a_json_content_type_when_they_have_a_body() -> None:
    transport = ScriptedTransport((200, b'{"submission_id": "s"}'), (200, b"success"))
    client = DashboardClient(transport, token="t")
    assert await client.submit_job(JobSubmitRequest(entrypoint="echo")) == "s"
    assert await client.check_gcs_health()
    submit, health = transport.requests
    assert (str(submit), submit.json) == ("POST /api/jobs/", {"entrypoint": "echo"})
    assert submit.headers == {AUTH_HEADER: "Bearer t", "Content-Type": "application/json"}
    assert health.headers == {}  # health checks never send the token


async def test_refusals_of_the_token_and_of_a_reused_submission_id() -> None:
    with pytest.raises(DashboardAuthError, match="GET /api/version: 401"):
        await scripted((401, b"who?"), token="t").get_version()
    duplicate = (500, b"job exists. Please use a different submission_id")
    with pytest.raises(SubmissionIdConflict):
        await scripted(duplicate).submit_job(JobSubmitRequest(entrypoint="x", submission_id="s"))
