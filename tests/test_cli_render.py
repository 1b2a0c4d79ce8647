"""``rayop render -f FILE``: what the operator creates for a file's objects, printed as YAML.

For each shipped sample, the objects render prints are the ones the operator creates when the
sample is applied to the embedded plane with the operator running (watched there as the API
server stored them): the same kinds, names and counts, every field render prints stored with that
value (the server only adds defaults and status). The operator's flags and Configuration file
apply; bad input is refused with one line per object naming it and the reason, exit 2.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from rayop.cli.commands import loaded_app
from rayop.cli.flags import normalize_argv
from rayop.examples import sample_text
from rayop.kube.resources import JOBS, PODS, RAY_CLUSTERS, SERVICES
from rayop.preview.manifests import CONTEXT_KINDS, RAY_KINDS
from rayop.preview.rendering import settled
from rayop.testing import ALL_KINDS, eventually, open_control_plane, open_operator

app = loaded_app()

Obj = dict[str, Any]
WATCHED = (RAY_CLUSTERS, SERVICES, PODS, JOBS)
"""The kinds the operator creates for the samples."""


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """render sets up logging as rayop run does; put the root logger back afterwards."""
    root = logging.getLogger()
    saved = (root.level, list(root.handlers))
    yield
    for handler in [h for h in root.handlers if h not in saved[1]]:
        root.removeHandler(handler)
        handler.close()
    root.setLevel(saved[0])


def _render(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, normalize_argv(["render", *args]), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def _write(tmp_path: Path, text: str, name: str = "in.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj["metadata"]
    return obj["kind"], meta.get("generateName") or meta["name"]


def _subset(small: Any, big: Any) -> bool:
    if isinstance(small, dict):
        return isinstance(big, dict) and all(
            k in big and _subset(v, big[k]) for k, v in small.items()
        )
    if isinstance(small, list):
        return (
            isinstance(big, list)
            and len(small) == len(big)
            and all(_subset(a, b) for a, b in zip(small, big, strict=True))
        )
    return bool(small == big)


RANDOM_SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]{5}"
"""apimachinery's ``rand.String(5)``: the suffix of a RayJob's or RayService's cluster name and
of a submission id."""


def _unrandomized(objs: list[Obj], names: list[str]) -> list[Obj]:
    """The objects with each ``<name>-<random suffix>`` of the given names made fixed."""
    text = yaml.safe_dump_all(objs, sort_keys=True)
    for name in names:
        text = re.sub(rf"\b{re.escape(name)}-{RANDOM_SUFFIX}\b", f"{name}-XXXXX", text)
    return list(yaml.safe_load_all(text))


async def _created_by_the_operator(sample: str) -> list[Obj]:
    """Applies a sample on the embedded plane with the operator running; returns every object
    of :data:`WATCHED` the operator created for it, as first stored, in order (the Job
    controller's pods left out)."""
    docs = [d for d in yaml.safe_load_all(sample_text(sample)) if d]
    added: list[Obj] = []
    async with open_control_plane() as plane, open_operator(plane, controllers=ALL_KINDS):
        await plane.namespace("render")
        rv = (await plane.client.list(PODS, namespace="render"))["metadata"]["resourceVersion"]

        async def watch(resource: Any) -> None:
            async with plane.client.watch(resource, namespace="render", resource_version=rv) as ev:
                async for event in ev:
                    if event.type == "ADDED":
                        added.append(event.object)

        watches = [asyncio.create_task(watch(r)) for r in WATCHED]
        mine = set()
        for doc in docs:
            resource = {**RAY_KINDS, **CONTEXT_KINDS}[doc["kind"]]
            await plane.create(resource, doc, "render")
            mine.add((doc["kind"], doc["metadata"]["name"]))
        ray = [d for d in docs if d["kind"] in RAY_KINDS]

        async def all_settled() -> bool:
            for doc in ray:
                got = plane.stored(RAY_KINDS[doc["kind"]], "render", doc["metadata"]["name"])
                if got is None or not settled(got):
                    return False
            return True

        await eventually(all_settled, timeout=30, what="the sample settled")
        await asyncio.sleep(1.5)  # render waits for a quiet second too
        for task in watches:
            task.cancel()
        await asyncio.gather(*watches, return_exceptions=True)
    added.sort(key=lambda o: int(o["metadata"]["resourceVersion"]))
    return [
        o
        for o in added
        if (o["kind"], o["metadata"]["name"]) not in mine
        and "Job" not in {r["kind"] for r in o["metadata"].get("ownerReferences") or []}
    ]  # the submitter Job's pod is the Job controller's


@pytest.mark.parametrize("sample", ["raycluster", "rayjob", "rayservice"])
def test_render_prints_what_the_operator_creates_on_the_embedded_plane(
    sample: str, tmp_path: Path
) -> None:
    docs = [d for d in yaml.safe_load_all(sample_text(sample)) if d]
    for doc in docs:
        doc["metadata"]["namespace"] = "render"
    code, out, err = _render("-f", _write(tmp_path, yaml.safe_dump_all(docs)), "--timeout", "30")
    assert code == 0, err
    rendered = [d for d in yaml.safe_load_all(out) if d]
    live = asyncio.run(_created_by_the_operator(sample))
    names = [d["metadata"]["name"] for d in docs if d["kind"] in RAY_KINDS]
    rendered, live = _unrandomized(rendered, names), _unrandomized(live, names)
    assert Counter(map(_key, rendered)) == Counter(map(_key, live))
    assert {o["kind"] for o in rendered} >= {"Service", "Pod"}
    for obj in rendered:
        same = [o for o in live if _key(o) == _key(obj)]
        assert any(_subset(obj, o) for o in same), f"{_key(obj)} differs from what was stored"


def test_the_rayjob_renders_its_cluster_pods_and_submitter_job(tmp_path: Path) -> None:
    code, out, err = _render("-f", _write(tmp_path, sample_text("rayjob")))
    assert code == 0, err
    kinds = Counter(d["kind"] for d in yaml.safe_load_all(out) if d)
    assert kinds["RayCluster"] == 1 and kinds["Job"] == 1 and kinds["Pod"] >= 2, kinds


def test_the_operators_configuration_file_applies(tmp_path: Path) -> None:
    config = _write(
        tmp_path,
        "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\n"
        "headSidecarContainers:\n- name: fluentbit\n  image: fluent/fluent-bit:1.9.6\n"
        "defaultPodLabels:\n  team: platform\n",
        "config.yaml",
    )
    sample = _write(tmp_path, sample_text("raycluster"))
    code, out, err = _render("-f", sample, "--config", config)
    assert code == 0, err
    pods = [d for d in yaml.safe_load_all(out) if d and d["kind"] == "Pod"]
    head = [p for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "head"]
    assert [c["name"] for c in head[0]["spec"]["containers"]][-1] == "fluentbit"
    assert all(p["metadata"]["labels"]["team"] == "platform" for p in pods)
    code, plain, err = _render("-f", sample)
    assert code == 0, err
    assert "fluentbit" not in plain and "team: platform" not in plain


def test_stdin_is_read_with_dash() -> None:
    code, out, err = _render("-f", "-", stdin=sample_text("raycluster"))
    assert code == 0, err
    assert "raycluster-sample-head-svc" in out


INVALID_CLUSTER = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: broken}
spec:
  headGroupSpec:
    rayStartParams: {}
    template: {spec: {containers: [{name: ray-head, image: rayproject/ray:2.52.0}]}}
  workerGroupSpecs:
  - groupName: small
    replicas: 1
    minReplicas: 3
    maxReplicas: 2
    rayStartParams: {}
    template: {spec: {containers: [{name: ray-worker, image: rayproject/ray:2.52.0}]}}
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
            "rayop: Deployment/web: not a ray.io object the operator renders (apps/v1 Deployment)",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: code}\n",
            "no RayCluster, RayJob or RayService in it",
        ),
        ("kind: [unclosed\n", "not YAML (line"),
        ("- just\n- a list\n", "document 1 is not a Kubernetes object"),
        (
            INVALID_CLUSTER,
            'rayop: RayCluster.ray.io "broken" is invalid: spec: Invalid value:',
        ),
    ],
    ids=["not-ray", "no-ray-object", "not-yaml", "not-an-object", "invalid"],
)
def test_bad_input_is_one_line_naming_the_object_and_exit_2(
    text: str, expected: str, tmp_path: Path
) -> None:
    code, out, err = _render("-f", _write(tmp_path, text))
    assert code == 2 and out == ""
    assert expected in err and len(err.strip().splitlines()) == 1, err


def test_a_missing_file_is_exit_2(tmp_path: Path) -> None:
    code, _, err = _render("-f", str(tmp_path / "absent.yaml"))
    assert code == 2 and "absent.yaml" in err
