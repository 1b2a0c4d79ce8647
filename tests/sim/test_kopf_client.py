"""An independent client on another stack: a kopf operator against `rayop apiserver`.

kopf (its own aiohttp client, authenticated through the official ``kubernetes`` package's
kubeconfig loader) lists and watches a custom resource, adds and removes its finalizer,
merge-patches status and annotations, and posts core/v1 Events. The flow: create a Widget
(the create handler's result lands in its status), patch its spec (the field handler runs),
delete it (the delete handler runs, kopf drops its finalizer, the Widget is gone).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from rayop.kube.client import KubeClient
from rayop.kube.config import load_config
from rayop.kube.errors import NotFound
from rayop.kube.resource import Resource
from rayop.kube.resources import CORE_EVENTS, CRDS
from rayop.testing import eventually

from .apiserver_process import running_apiserver

pytestmark = pytest.mark.timeout(180)

WIDGETS = Resource("rayop.test", "v1", "widgets", "Widget")
OPERATOR = Path(__file__).with_name("kopf_widget_operator.py")
CRD: dict[str, Any] = {
    "metadata": {"name": "widgets.rayop.test"},
    "spec": {
        "group": "rayop.test",
        "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Iterator[Path]:
    with running_apiserver(tmp_path) as path:
        yield path


@pytest.fixture
async def client(kubeconfig: Path) -> AsyncIterator[KubeClient]:
    config = await load_config(kubeconfig=str(kubeconfig))
    async with KubeClient(config, qps=-1) as c:
        await c.create(CRDS, CRD)
        yield c


@pytest.fixture
async def kopf_operator(
    kubeconfig: Path, client: KubeClient, tmp_path: Path
) -> AsyncIterator[Path]:
    """Runs ``kopf run --standalone -A`` on the Widget operator; yields its log's path."""
    log_path = tmp_path / "kopf.log"
    with log_path.open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "kopf",
            "run",
            "--standalone",
            "--all-namespaces",
            "--verbose",
            str(OPERATOR),
            env={**os.environ, "KUBECONFIG": str(kubeconfig)},
            stdout=log,
            stderr=asyncio.subprocess.STDOUT,
        )
        try:
            yield log_path
            assert proc.returncode is None, f"kopf exited early; its log: {log_path}"
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 20)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def _widget(client: KubeClient) -> dict[str, Any] | None:
    try:
        return await client.get(WIDGETS, "w1", namespace="default")
    except NotFound:
        return None


async def test_kopf_creates_watches_patches_and_deletes(
    client: KubeClient, kopf_operator: Path
) -> None:
    await client.create(
        WIDGETS, {"metadata": {"name": "w1"}, "spec": {"size": 1}}, namespace="default"
    )
    state: dict[str, Any] = {}

    async def handled(key: str, value: Any) -> bool:
        state["w"] = w = await _widget(client)
        return bool(w and (w.get("status") or {}).get(key) == value)

    await eventually(
        lambda: handled("created", {"size": 1}), timeout=60, what="kopf's create handler"
    )
    assert "rayop.test/kopf-finalizer" in state["w"]["metadata"]["finalizers"]

    await client.patch(WIDGETS, "w1", {"spec": {"size": 3}}, namespace="default")
    await eventually(  # kopf names a field handler's result after the handler and its field
        lambda: handled("resized/spec.size", {"from": 1, "to": 3}),
        timeout=60,
        what="kopf's field handler",
    )

    await client.delete(WIDGETS, "w1", namespace="default")

    async def gone() -> bool:
        return await _widget(client) is None

    await eventually(gone, timeout=60, what="the Widget gone after kopf's delete handler")

    async def posted(text: str) -> bool:  # kopf posts its Events from a queue, a bit later
        events = (await client.list(CORE_EVENTS, namespace="default"))["items"]
        return any(
            text in e.get("message", "") for e in events if e["involvedObject"]["name"] == "w1"
        )

    await eventually(lambda: posted("widget of size 1"), timeout=30, what="event")
    await eventually(lambda: posted("widget w1 is going away"), timeout=30, what="event")
    log = await asyncio.to_thread(kopf_operator.read_text)
    assert "Traceback" not in log and "[ERROR" not in log, log[-3000:]


def test_operator_source_is_importable_without_running_it() -> None:
    """The operator module registers its handlers when imported (kopf run does the same)."""
    run = subprocess.run(
        [sys.executable, "-c", f"import runpy; runpy.run_path({str(OPERATOR)!r})"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
