"""pods/log, pods/exec|attach|portforward on the embedded control plane, and the log store."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import aiohttp
import pytest

from rayop.sim.nodes.container_logs import MAX_LOG_BYTES, ContainerLog, LogQuery, PodLogs
from rayop.testing import FAST_KUBELET, PlaneUnderTest, eventually, open_control_plane

PODS = "/api/v1/namespaces/default/pods"
HEAD = {
    "name": "ray-head",
    "image": "rayproject/ray:2.46.0",
    "command": ["/bin/bash", "-lc", "--"],
    "args": ["ulimit -n 65536; ray start --head --block --dashboard-host=0.0.0.0"],
}


def _pod(name: str, *containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": list(containers), **spec}}


class Api:
    """A raw HTTP client of the plane (text bodies, as kubectl reads logs)."""

    def __init__(self, plane: PlaneUnderTest, session: aiohttp.ClientSession) -> None:
        self.plane = plane
        self.session = session

    async def create(self, pod: dict[str, Any]) -> dict[str, Any]:
        async with self.session.post(PODS, json=pod) as resp:
            assert resp.status == 201, await resp.text()
            body: dict[str, Any] = await resp.json()
            return body

    async def log(self, name: str, **params: str) -> tuple[int, str, str]:
        async with self.session.get(f"{PODS}/{name}/log", params=params) as resp:
            return resp.status, resp.content_type, await resp.text()

    async def status(self, name: str) -> dict[str, Any]:
        async with self.session.get(f"{PODS}/{name}") as resp:
            body: dict[str, Any] = await resp.json()
            return body

    async def running(self, name: str) -> dict[str, Any]:
        async def check() -> bool:
            pod = await self.status(name)
            return (pod.get("status") or {}).get("phase") == "Running"

        await eventually(check, timeout=10)
        return await self.status(name)


@pytest.fixture
async def api(request: pytest.FixtureRequest) -> AsyncIterator[Api]:
    kubelet = getattr(request, "param", FAST_KUBELET)
    async with open_control_plane(kubelet=kubelet, crds=False) as plane:
        headers = {"Authorization": f"Bearer {plane.cp.token}"}
        async with aiohttp.ClientSession(plane.cp.url, headers=headers) as session:
            yield Api(plane, session)


async def test_a_running_ray_head_logs_its_command_and_ray_start(api: Api) -> None:
    await api.create(_pod("head", HEAD))
    await api.running("head")
    code, ctype, text = await api.log("head")
    assert code == 200 and ctype == "text/plain"
    lines = text.splitlines()
    assert lines[0] == (
        '[rayop simulated kubelet] container "ray-head" started from image "rayproject/ray:2.46.0"'
    )
    assert "ray start --head --block" in lines[1]
    pod = await api.status("head")
    assert f"Local node IP: {pod['status']['podIP']}" in lines
    assert "Ray runtime started." in lines


async def test_container_choice_errors_as_kube_apiserver(api: Api) -> None:
    await api.create(_pod("two", HEAD, {"name": "side", "image": "busybox"}))
    await api.running("two")
    code, _, text = await api.log("two")
    assert code == 400
    assert "a container name must be specified for pod two, choose one of: [ray-head side]" in text
    code, _, text = await api.log("two", container="nope")
    assert code == 400 and "container nope is not valid for pod two" in text
    code, _, text = await api.log("two", container="side")
    assert code == 200 and 'container "side" started' in text
    code, _, text = await api.log("missing")
    assert code == 404 and 'pods \\"missing\\" not found' in text


@pytest.mark.parametrize(
    "api", [replace(FAST_KUBELET, running_delay=30.0)], indirect=True, ids=["slow-start"]
)
async def test_a_container_not_started_is_waiting_to_start(api: Api) -> None:
    await api.create(_pod("slow", {"name": "c", "image": "busybox"}))

    async def bound() -> bool:
        return bool((await api.status("slow"))["spec"].get("nodeName"))

    await eventually(bound, timeout=10)
    code, _, text = await api.log("slow")
    assert code == 400
    assert 'container \\"c\\" in pod \\"slow\\" is waiting to start: ContainerCreating' in text
    code, _, text = await api.log("slow", previous="true")
    assert code == 400 and "previous terminated container" in text


@pytest.mark.parametrize(
    "api", [replace(FAST_KUBELET, unschedulable_rate=1.0)], indirect=True, ids=["unschedulable"]
)
async def test_a_pod_bound_to_no_node_answers_no_content(api: Api) -> None:
    await api.create(_pod("nowhere", {"name": "c", "image": "busybox"}))
    code, _, text = await api.log("nowhere")
    assert code == 204 and text == ""


async def test_tail_timestamps_limit_and_since(api: Api) -> None:
    await api.create(_pod("opts", HEAD))
    await api.running("opts")
    _, _, full = await api.log("opts")
    lines = full.splitlines(keepends=True)
    _, _, tail = await api.log("opts", tailLines="2")
    assert tail == "".join(lines[-2:])
    _, _, none = await api.log("opts", tailLines="0")
    assert none == ""
    _, _, stamped = await api.log("opts", timestamps="true", tailLines="1")
    stamp, rest = stamped.split(" ", 1)
    assert (
        rest == lines[-1] and stamp.endswith("Z") and len(stamp) == len("2025-01-01T00:00:00.") + 10
    )
    _, _, limited = await api.log("opts", limitBytes="7")
    assert limited == full[:7]
    _, _, recent = await api.log("opts", sinceSeconds="3600")
    assert recent == full
    future = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    _, _, later = await api.log("opts", sinceTime=future)
    assert later == ""


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"tailLines": "-1"}, "tailLines: Invalid value: -1: must be greater than or equal to 0"),
        ({"limitBytes": "0"}, "limitBytes: Invalid value: 0: must be greater than 0"),
        ({"sinceSeconds": "0"}, "sinceSeconds: Invalid value: 0: must be greater than 0"),
        (
            {"sinceSeconds": "5", "sinceTime": "2025-01-01T00:00:00Z"},
            "at most one of `sinceTime` or `sinceSeconds` may be specified",
        ),
    ],
)
async def test_invalid_options_are_refused_as_pod_log_options(
    api: Api, params: dict[str, str], message: str
) -> None:
    await api.create(_pod("bad", {"name": "c", "image": "busybox"}))
    code, _, text = await api.log("bad", **params)
    assert code == 422 and 'PodLogOptions \\"bad\\" is invalid' in text and message in text
    code, _, text = await api.log("bad", tailLines="x")
    assert code == 400 and "invalid syntax" in text


async def test_follow_streams_until_the_container_exits(api: Api) -> None:
    await api.create(
        _pod("job", {"name": "c", "image": "busybox", "command": ["sh", "-c", "exit 3"]})
    )
    await api.running("job")
    params = {"follow": "true", "timestamps": "false"}
    async with api.session.get(f"{PODS}/job/log", params=params) as resp:
        assert resp.status == 200
        first = await resp.content.readline()
        assert b'container "c" started' in first
        done = await api.plane.cp.kubelet.complete_pod(
            "default", "job", succeeded=False, exit_code=3
        )
        assert done
        async with asyncio.timeout(10):
            rest = (await resp.content.read()).decode()
    assert rest.splitlines()[-1] == (
        '[rayop simulated kubelet] container "c" exited with code 3 (Error)'
    )
    code, _, after = await api.log("job")
    assert code == 200 and after.endswith("exited with code 3 (Error)\n")


@pytest.mark.parametrize(
    "api",
    [replace(FAST_KUBELET, crashloop_rate=1.0, crashloop_backoff=0.05)],
    indirect=True,
    ids=["crashloop"],
)
async def test_a_crash_looping_container_shows_its_last_run(api: Api) -> None:
    await api.create(_pod("crash", {"name": "c", "image": "busybox"}))

    async def restarted() -> bool:
        statuses = (await api.status("crash")).get("status", {}).get("containerStatuses") or []
        return bool(statuses) and statuses[0]["restartCount"] >= 2

    await eventually(restarted, timeout=10)
    for params in ({}, {"previous": "true"}):
        code, _, text = await api.log("crash", **params)
        assert code == 200, text
        assert text.splitlines()[0].endswith('container "c" started from image "busybox"')
        assert text.endswith('container "c" exited with code 1 (Error)\n')


async def test_a_deleted_pod_has_no_logs_left(api: Api) -> None:
    await api.create(_pod("gone", {"name": "c", "image": "busybox"}))
    pod = await api.running("gone")
    logs = api.plane.cp.kubelet.logs
    assert logs.current(pod["metadata"]["uid"], "c") is not None
    async with api.session.delete(f"{PODS}/gone", params={"gracePeriodSeconds": "0"}) as resp:
        assert resp.status == 200

    async def forgotten() -> bool:
        return logs.current(pod["metadata"]["uid"], "c") is None

    await eventually(forgotten, timeout=10)
    code, _, _ = await api.log("gone")
    assert code == 404


@pytest.mark.parametrize("sub", ["exec", "attach"])
async def test_streaming_subresources_answer_a_clear_not_supported_status(
    api: Api, sub: str
) -> None:
    await api.create(_pod("shell", {"name": "c", "image": "busybox"}))
    await api.running("shell")
    for method in ("GET", "POST"):
        async with api.session.request(method, f"{PODS}/shell/{sub}?command=ls&stdout=true") as resp:
            body = await resp.json()
        assert resp.status == 501
        assert body["kind"] == "Status" and body["status"] == "Failure" and body["code"] == 501
        assert body["message"].startswith(f"{sub} is not supported on the simulated kubelet")
    async with api.session.post(f"{PODS}/absent/{sub}") as resp:
        assert resp.status == 404


async def test_container_log_splits_lines_and_bounds_its_size() -> None:
    log = ContainerLog("c")
    log.write("a\nb", at=1.0)
    log.write(b"c\n", at=2.0)
    assert log.read() == b"a\nb\nc\n"
    assert log.read(LogQuery(since=2.0)) == b"c\n"
    assert log.read(LogQuery(timestamps=True, tail_lines=1)) == (
        b"1970-01-01T00:00:02.000000000Z c\n"
    )
    big = "x" * 1023
    for _ in range(2 * MAX_LOG_BYTES // 1024):
        log.write(big)
    assert len(log.read()) <= MAX_LOG_BYTES and log.read().endswith(big.encode() + b"\n")
    log.close()
    log.write("after close")
    assert not log.read().endswith(b"after close\n")


async def test_follow_sees_writes_made_while_it_waits_and_ends_on_close() -> None:
    logs = PodLogs()
    sink = logs.open("uid", "c")
    sink.write("one")
    seen: list[bytes] = []

    async def reader() -> None:
        async for chunk in sink.follow():
            seen.append(chunk)

    task = asyncio.create_task(reader())
    await asyncio.sleep(0)
    sink.write("two\nthree")
    await asyncio.sleep(0)
    sink.close()
    async with asyncio.timeout(5):
        await task
    assert b"".join(seen) == b"one\ntwo\nthree\n"
    restarted = logs.open("uid", "c", restart=1)
    assert logs.previous("uid", "c") is sink and logs.current("uid", "c") is restarted
    logs.forget("uid")
    assert logs.current("uid", "c") is None and restarted.closed
