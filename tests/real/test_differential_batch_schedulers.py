"""Differential test: the gang-scheduling objects and pod fields KubeRay v1.7.0 and rayop make
with each ``--batch-scheduler``, on the same real control plane, and their startup refusals.

For each scheduler, KubeRay runs first with the flag (``--watch-namespace`` on its namespaces)
and is stopped, then rayop with the same flag on a second set of namespaces. The samples
``ray-job.volcano-scheduler-queue.yaml`` (and its RayCluster twin),
``ray-job.yunikorn-scheduler.yaml``, ``ray-cluster.kai-scheduler.yaml``,
``ray-cluster.kai-gpu-sharing.yaml`` and ``ray-cluster.scheduler-plugins.yaml`` (plus a
scheduler-plugins cluster of this test's own, without the gang label) are applied as
``kubectl apply -f`` would. No scheduler runs, so the pods stay Pending; compared are the
PodGroups (Volcano's and scheduler-plugins'), the pods (labels, annotations, schedulerName:
``differential.snapshot``) and the RayCluster a RayJob creates (its labels and annotations).
Then Volcano's lifecycle: a RayCluster scaled (its PodGroup resized), a RayJob suspended (its
PodGroup emptied, the queue released, ``BatchSchedulerCleanedUp``), the RayCluster deleted (its
PodGroup collected by the garbage collector): the PodGroups after each step are compared.

CRDs: scheduler-plugins' PodGroup CRD comes from its Go module (``scripts/batch-scheduler-crds``,
the version KubeRay's go.mod uses). volcano.sh/apis ships no CRD YAML and KAI's module is not
in KubeRay's go.mod, so their minimal CRDs are written from the published Go types in
``tests/real/crds/`` (``volcano-scheduling.yaml``, ``kai-scheduler.yaml``). YuniKorn has none.

Kubernetes WAS (the ``KubernetesWAS`` gate): KubeRay v1.7.0 speaks only
``scheduling.k8s.io/v1alpha2``, which kube-apiserver v1.37 no longer serves (it has
``v1beta1``), so both operators refuse to start with the gate on, with the same message; and an
unknown ``--batch-scheduler`` name stops both at startup.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from rayop.controllers.batchscheduler import scheduler_plugins, volcano
from rayop.controllers.config.options import OperatorOptions
from rayop.kube.client import KubeClient
from rayop.kube.config import load_config
from rayop.kube.errors import AlreadyExists
from rayop.kube.resource import Resource
from rayop.kube.resources import CONFIGMAPS, CRDS, EVENTS, PODS, RAY_CLUSTERS, RAY_JOBS
from rayop.testing import eventually, open_operator
from tests.kuberay_compat import sample_docs

from .differential import _common_metadata, _replace_strings, diff, snapshot
from .real_support import (
    create_namespace,
    kuberay_running,
    user_client,
)

pytestmark = [
    pytest.mark.real,
    pytest.mark.timeout(300, func_only=True),
    pytest.mark.asyncio(loop_scope="module"),
]

Obj = dict[str, Any]
REPO = Path(__file__).resolve().parents[2]
CRD_DIR = Path(__file__).resolve().parent / "crds"
FETCH_SCRIPT = REPO / "scripts" / "batch-scheduler-crds"
VOLCANO_QUEUES = Resource("scheduling.volcano.sh", "v1beta1", "queues", "Queue", namespaced=False)
KAI_QUEUES = Resource("scheduling.run.ai", "v2", "queues", "Queue", namespaced=False)
CLUSTER_SCOPED = {
    "scheduling.volcano.sh/v1beta1": VOLCANO_QUEUES,
    "scheduling.run.ai/v2": KAI_QUEUES,
}
POD_GROUPS = (volcano.PODGROUPS, scheduler_plugins.PODGROUPS)
SETTLE_SECONDS = 3.0

PLAIN_PLUGINS_CLUSTER: Obj = {
    "apiVersion": "ray.io/v1",
    "kind": "RayCluster",
    "metadata": {"name": "no-gang"},
    "spec": {
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "ray-head",
                            "image": "rayproject/ray:2.52.0",
                            "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                        }
                    ]
                }
            },
        },
        "workerGroupSpecs": [
            {
                "groupName": "w",
                "replicas": 3,
                "minReplicas": 1,
                "maxReplicas": 2,  # clamped: 2 pods, but KubeRay sizes resources by replicas
                "rayStartParams": {},
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "ray-worker",
                                "image": "rayproject/ray:2.52.0",
                                "resources": {"limits": {"cpu": "1", "memory": "1536Mi"}},
                            }
                        ]
                    }
                },
            }
        ],
    },
}
"""A scheduler-plugins case of this test's own: no gang label (no PodGroup, only the
scheduler name), limits standing in for requests, replicas above maxReplicas."""
GANG_PLUGINS_CLUSTER: Obj = copy.deepcopy(PLAIN_PLUGINS_CLUSTER)
GANG_PLUGINS_CLUSTER["metadata"] = {
    "name": "gang",
    "labels": {"ray.io/gang-scheduling-enabled": "true"},
}


@dataclass(frozen=True)
class Case:
    """One scheduler and the documents applied under it (each list in its own namespace)."""

    scheduler: str
    files: tuple[str, ...]
    extra: tuple[Obj, ...] = ()


CASES = (
    Case(
        "volcano",
        ("ray-job.volcano-scheduler-queue.yaml", "ray-cluster.volcano-scheduler-queue.yaml"),
    ),
    Case("yunikorn", ("ray-job.yunikorn-scheduler.yaml", "ray-cluster.yunikorn-scheduler.yaml")),
    Case("kai-scheduler", ("ray-cluster.kai-scheduler.yaml", "ray-cluster.kai-gpu-sharing.yaml")),
    Case(
        "scheduler-plugins",
        ("ray-cluster.scheduler-plugins.yaml",),
        (GANG_PLUGINS_CLUSTER, PLAIN_PLUGINS_CLUSTER),
    ),
)


@dataclass
class Outcome:
    """What one operator left for one scheduler: per document set, normalised objects."""

    per_set: dict[str, dict[str, Any]] = field(default_factory=dict)


def _documents(case: Case) -> dict[str, list[Obj]]:
    """The documents of each set: one per sample file, one for the case's own objects."""
    sets: dict[str, list[Obj]] = {}
    for file_name in case.files:
        sets[file_name] = sample_docs(file_name)
    if case.extra:
        sets["own"] = [copy.deepcopy(o) for o in case.extra]
    return sets


def _load_crds() -> list[Obj]:
    proc = subprocess.run(
        [str(FETCH_SCRIPT)], capture_output=True, text=True, check=False, timeout=300
    )
    if proc.returncode != 0:
        pytest.fail(f"scripts/batch-scheduler-crds failed: {proc.stderr[-2000:]}")
    fetched = Path(proc.stdout.strip().splitlines()[-1])
    paths = [
        CRD_DIR / "volcano-scheduling.yaml",
        CRD_DIR / "kai-scheduler.yaml",
        *sorted(fetched.glob("scheduler-plugins-*/*.yaml")),
    ]
    docs: list[Obj] = []
    for path in paths:
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


async def _install_crds(client: KubeClient) -> None:
    for crd in _load_crds():
        with contextlib.suppress(AlreadyExists):
            await client.create(CRDS, crd)

    async def served() -> bool:
        try:
            for res in (*POD_GROUPS, VOLCANO_QUEUES, KAI_QUEUES):
                await client.list(res, limit=1)
        except Exception:
            return False
        return True

    await eventually(served, timeout=60, what="the batch schedulers' kinds served")


async def _apply(client: KubeClient, docs: list[Obj], ns: str) -> None:
    for doc in docs:
        body = copy.deepcopy(doc)
        queue = CLUSTER_SCOPED.get(body.get("apiVersion", ""))
        if queue is not None and body.get("kind") == "Queue":
            with contextlib.suppress(AlreadyExists):  # shared by both operators' runs
                await client.create(queue, body)
            continue
        resource = {"RayCluster": RAY_CLUSTERS, "RayJob": RAY_JOBS, "ConfigMap": CONFIGMAPS}
        body["metadata"]["namespace"] = ns
        await client.create(resource[body["kind"]], body, namespace=ns)


def _expected_pods(docs: list[Obj]) -> int:
    total = 0
    for doc in docs:
        spec = doc.get("spec") or {}
        if doc.get("kind") == "RayJob":
            spec = spec.get("rayClusterSpec") or {}
        elif doc.get("kind") != "RayCluster":
            continue
        total += 1
        for group in spec.get("workerGroupSpecs") or ():
            replicas = min(
                max(group.get("replicas", 0), group.get("minReplicas", 0)),
                group.get("maxReplicas", 2**31 - 1),
            )
            total += replicas * group.get("numOfHosts", 1)
    return total


def _normalize(obj: Obj, ns: str) -> Obj:
    out = _common_metadata(obj)
    return _replace_strings(out, ns, "<namespace>")  # type: ignore[no-any-return]


async def _snapshot(client: KubeClient, ns: str) -> dict[str, Any]:
    pods = (await client.list(PODS, namespace=ns))["items"]
    shot = snapshot(pods, [])
    groups: dict[str, Obj] = {}
    for res in POD_GROUPS:
        for group in (await client.list(res, namespace=ns))["items"]:
            groups[f"{res.group}/{group['metadata']['name']}"] = _normalize(group, ns)
    shot["podgroups"] = groups
    job_clusters, generated = {}, {}
    for cluster in (await client.list(RAY_CLUSTERS, namespace=ns))["items"]:
        labels = cluster["metadata"].get("labels") or {}
        job = labels.get("ray.io/originated-from-cr-name")
        if job:
            generated[cluster["metadata"]["name"]] = job
            meta = _normalize(cluster, ns)["metadata"]
            job_clusters[job] = {k: meta.get(k) for k in ("labels", "annotations")}
    shot["rayjob_clusters"] = job_clusters
    for cluster_name, job in generated.items():  # <rayjob>-<5 random characters>
        shot = _replace_strings(shot, cluster_name, f"{job}-<random>")
    return shot


async def _run_case(client: KubeClient, case: Case, namespaces: dict[str, str]) -> Outcome:
    sets = _documents(case)
    for key, docs in sets.items():
        await _apply(client, docs, namespaces[key])
    for key, docs in sets.items():
        ns, want = namespaces[key], _expected_pods(docs)

        async def all_pods(ns: str = ns, want: int = want) -> bool:
            return len((await client.list(PODS, namespace=ns))["items"]) >= want

        await eventually(all_pods, timeout=90, what=f"{case.scheduler} {key}: {want} pods")
    await asyncio.sleep(SETTLE_SECONDS)  # late writes (a PodGroup resize)
    return Outcome({key: await _snapshot(client, namespaces[key]) for key in sets})


def _namespaces(prefix: str, case: Case, token: str) -> dict[str, str]:
    keys = [*case.files, *(["own"] if case.extra else [])]
    short = case.scheduler.split("-")[0][:6]
    return {key: f"{prefix}-{short}-{token}-{i}" for i, key in enumerate(keys)}


@contextlib.asynccontextmanager
async def _rayop(kubeconfig: str, scheduler: str, namespaces: list[str]) -> AsyncIterator[None]:
    config = await load_config(kubeconfig=kubeconfig)
    async with open_operator(
        config,
        controllers=("RayCluster", "RayJob"),
        options=OperatorOptions(batch_scheduler=scheduler),
        watch_namespaces=namespaces,
        ready_timeout=60,
    ):
        yield


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def outcomes(
    real_kubeconfig: str, kuberay_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[dict[str, tuple[Outcome, Outcome]]]:
    """Runs KubeRay then rayop for every scheduler; yields {scheduler: (kuberay, rayop)}."""
    token = secrets.token_hex(2)
    log_path = tmp_path_factory.mktemp("kuberay-batch") / "ray-operator.log"
    results: dict[str, tuple[Outcome, Outcome]] = {}
    async with user_client(real_kubeconfig) as client:
        await _install_crds(client)
        for case in CASES:
            kuberay_ns = _namespaces("kuberay", case, token)
            rayop_ns = _namespaces("rayop", case, token)
            for ns in (*kuberay_ns.values(), *rayop_ns.values()):
                await create_namespace(client, ns)
            args = (
                f"--batch-scheduler={case.scheduler}",
                f"--watch-namespace={','.join(kuberay_ns.values())}",
            )
            async with kuberay_running(kuberay_binary, real_kubeconfig, log_path, *args):
                kuberay = await _run_case(client, case, kuberay_ns)
            async with _rayop(real_kubeconfig, case.scheduler, list(rayop_ns.values())):
                rayop = await _run_case(client, case, rayop_ns)
            results[case.scheduler] = (kuberay, rayop)
    yield results


@pytest.mark.parametrize("scheduler", [c.scheduler for c in CASES])
async def test_the_same_objects_and_pod_fields(
    outcomes: dict[str, tuple[Outcome, Outcome]], scheduler: str
) -> None:
    kuberay, rayop = outcomes[scheduler]
    assert set(kuberay.per_set) == set(rayop.per_set)
    lines: list[str] = []
    for key in kuberay.per_set:
        lines += [f"{key}: {line}" for line in diff(kuberay.per_set[key], rayop.per_set[key])]
    assert not lines, "\n".join(lines)


async def test_what_kuberay_made_is_what_the_test_expects(
    outcomes: dict[str, tuple[Outcome, Outcome]],
) -> None:
    """A guard that the comparison compares something: KubeRay's own objects are as read."""
    volcano_job = outcomes["volcano"][0].per_set["ray-job.volcano-scheduler-queue.yaml"]
    group = volcano_job["podgroups"]["scheduling.volcano.sh/ray-rayjob-sample-0-pg"]
    assert group["spec"]["minMember"] == 3
    assert group["spec"]["queue"] == "kuberay-test-queue"
    head = volcano_job["pods"]["head"][0]
    assert head["spec"]["schedulerName"] == "volcano"
    assert (
        head["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "ray-rayjob-sample-0-pg"
    )
    kai = outcomes["kai-scheduler"][0].per_set["ray-cluster.kai-scheduler.yaml"]
    assert kai["pods"]["head"][0]["metadata"]["labels"]["kai.scheduler/queue"] == "team-a"
    plugins = outcomes["scheduler-plugins"][0].per_set
    assert (
        "scheduling.x-k8s.io/test-podgroup-0"
        in plugins["ray-cluster.scheduler-plugins.yaml"]["podgroups"]
    )
    assert list(plugins["own"]["podgroups"]) == ["scheduling.x-k8s.io/gang"]
    yunikorn = outcomes["yunikorn"][0].per_set["ray-job.yunikorn-scheduler.yaml"]
    annotations = yunikorn["pods"]["head"][0]["metadata"]["annotations"]
    groups = json.loads(annotations["yunikorn.apache.org/task-groups"])
    assert [g["name"] for g in groups] == ["headgroup", "small-group", "submittergroup"]


async def _pod_groups(client: KubeClient, ns: str) -> dict[str, Obj]:
    listed = (await client.list(volcano.PODGROUPS, namespace=ns))["items"]
    return {g["metadata"]["name"]: _normalize(g, ns) for g in listed}


async def _volcano_lifecycle(client: KubeClient, ns: str) -> list[Any]:
    """Scale a RayCluster, suspend a RayJob, delete the RayCluster; the PodGroups after each."""
    docs = _documents(CASES[0])
    job_docs = copy.deepcopy(docs["ray-job.volcano-scheduler-queue.yaml"])
    for doc in job_docs:
        if doc["kind"] == "RayJob":
            doc["spec"]["shutdownAfterJobFinishes"] = True  # a RayJob KubeRay lets suspend
    await _apply(client, [*job_docs, *docs["ray-cluster.volcano-scheduler-queue.yaml"]], ns)
    steps: list[Any] = []

    async def groups_are(names: set[str]) -> bool:
        return set(await _pod_groups(client, ns)) == names

    both = {"ray-rayjob-sample-0-pg", "ray-test-cluster-0-pg"}
    await eventually(lambda: groups_are(both), timeout=60, what="both PodGroups")
    await asyncio.sleep(SETTLE_SECONDS)
    steps.append(await _pod_groups(client, ns))
    cluster = await client.get(RAY_CLUSTERS, "test-cluster-0", namespace=ns)
    worker = cluster["spec"]["workerGroupSpecs"][0]
    worker["replicas"] = worker["maxReplicas"] = worker.get("replicas", 0) + 1
    await client.update(RAY_CLUSTERS, cluster)

    async def resized() -> bool:
        group = (await _pod_groups(client, ns))["ray-test-cluster-0-pg"]
        return bool(
            group["spec"]["minMember"] != steps[0]["ray-test-cluster-0-pg"]["spec"]["minMember"]
        )

    await eventually(resized, timeout=60, what="the RayCluster's PodGroup resized")
    steps.append(await _pod_groups(client, ns))
    await client.patch(RAY_JOBS, "rayjob-sample-0", {"spec": {"suspend": True}}, namespace=ns)

    async def suspended() -> bool:
        job = await client.get(RAY_JOBS, "rayjob-sample-0", namespace=ns)
        return (job.get("status") or {}).get("jobDeploymentStatus") == "Suspended"

    await eventually(suspended, timeout=90, what="the RayJob suspended")
    await asyncio.sleep(SETTLE_SECONDS)
    steps.append(await _pod_groups(client, ns))
    events = (await client.list(EVENTS, namespace=ns))["items"]
    steps.append(
        sorted(
            {
                (e.get("reason", ""), (e.get("note") or "").replace(ns, "<ns>"))
                for e in events
                if "BatchScheduler" in str(e.get("reason", ""))
            }
        )
    )
    await client.delete(RAY_CLUSTERS, "test-cluster-0", namespace=ns)

    async def collected() -> bool:
        # Seen in CI under load (2026-12-06): under KubeRay the deleted cluster's PodGroup was
        # listed again just after a list that no longer held it (the cause was not recorded; a
        # pass from a stale cache making it again would do it). What is compared is where each
        # operator settles, so the PodGroup must stay gone for SETTLE_SECONDS.
        if not await groups_are({"ray-rayjob-sample-0-pg"}):
            return False
        await asyncio.sleep(SETTLE_SECONDS)
        return await groups_are({"ray-rayjob-sample-0-pg"})

    await eventually(collected, timeout=120, what="the PodGroup collected, and staying so")
    steps.append(await _pod_groups(client, ns))
    return steps


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def lifecycles(
    real_kubeconfig: str, kuberay_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[list[Any], list[Any]]]:
    """The Volcano lifecycle under KubeRay, then under rayop; yields (kuberay, rayop)."""
    token = secrets.token_hex(2)
    log_path = tmp_path_factory.mktemp("kuberay-volcano") / "ray-operator.log"
    async with user_client(real_kubeconfig) as client:
        await _install_crds(client)
        kuberay_ns = await create_namespace(client, f"kuberay-vclife-{token}")
        rayop_ns = await create_namespace(client, f"rayop-vclife-{token}")
        args = ("--batch-scheduler=volcano", f"--watch-namespace={kuberay_ns}")
        async with kuberay_running(kuberay_binary, real_kubeconfig, log_path, *args):
            kuberay = await _volcano_lifecycle(client, kuberay_ns)
        async with _rayop(real_kubeconfig, "volcano", [rayop_ns]):
            rayop = await _volcano_lifecycle(client, rayop_ns)
    yield kuberay, rayop


async def test_volcano_pod_groups_follow_scale_suspend_and_delete_as_kuberay(
    lifecycles: tuple[list[Any], list[Any]],
) -> None:
    kuberay, rayop = lifecycles
    suspended = kuberay[2]["ray-rayjob-sample-0-pg"]["spec"]
    assert suspended == {"minResources": {}, "queue": "kuberay-test-queue"}  # queue released
    assert any(reason == "BatchSchedulerCleanedUp" for reason, _ in kuberay[3])
    names = ["created", "scaled", "suspended", "events", "deleted"]
    lines = [
        f"{names[i]}: {line}" for i in range(len(names)) for line in diff(kuberay[i], rayop[i])
    ]
    assert not lines, "\n".join(lines)


def _rayop_run(kubeconfig: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": kubeconfig, "COLUMNS": "250"}
    return subprocess.run(
        [sys.executable, "-m", "rayop", "run", "--metrics-addr=0",
         "--health-probe-bind-address=0", "--enable-leader-election=false", *args],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip


async def _kuberay_exit(
    binary: Path, kubeconfig: str, log_path: Path, *args: str
) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        str(binary), *args, "--metrics-addr=0", "--health-probe-bind-address=0",
        "--enable-leader-election=false",
        env={**os.environ, "KUBECONFIG": kubeconfig},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise AssertionError("KubeRay did not stop at startup") from None
    await asyncio.to_thread(log_path.write_bytes, out)
    assert proc.returncode is not None
    return proc.returncode, out.decode(errors="replace")


async def test_kubernetes_was_on_this_server_stops_both_at_startup(
    real_kubeconfig: str, kuberay_binary: Path, tmp_path: Path
) -> None:
    gate = "--feature-gates=KubernetesWAS=true"
    code, log = await _kuberay_exit(kuberay_binary, real_kubeconfig, tmp_path / "k.log", gate)
    message = "no served scheduling.k8s.io API version available for kubernetes-was-v1alpha2"
    assert code == 1 and message in log, log[-2000:]
    proc = await asyncio.to_thread(_rayop_run, real_kubeconfig, gate)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert message in proc.stderr


async def test_an_unknown_scheduler_stops_both_at_startup(
    real_kubeconfig: str, kuberay_binary: Path, tmp_path: Path
) -> None:
    flag = "--batch-scheduler=slurm"
    code, log = await _kuberay_exit(kuberay_binary, real_kubeconfig, tmp_path / "k.log", flag)
    assert code == 1 and "scheduler is not supported, name=slurm" in log, log[-2000:]
    proc = await asyncio.to_thread(_rayop_run, real_kubeconfig, flag)
    assert proc.returncode == 2  # rayop's usage-error status, with KubeRay's message and the names
    assert "scheduler is not supported, name=slurm" in proc.stderr
    assert "volcano, yunikorn, kai-scheduler, scheduler-plugins" in proc.stderr
