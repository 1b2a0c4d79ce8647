"""The Ray autoscaler drives rayop on ``rayop up --real-ray`` (issue 36), v1 and v2.

The head's autoscaler sidecar reads its service account token at its in-pod path, reaches the
plane's HTTPS endpoint from ``KUBERNETES_SERVICE_HOST`` and is allowed by the Role rayop gives
the head's ServiceAccount. Tasks needing a CPU, a (fake) GPU and a custom resource the cluster
lacks bring up a worker of the group that offers each, the idle workers go after
``idleTimeoutSeconds`` through ``scaleStrategy.workersToDelete``, ``minReplicas``/``maxReplicas``
edits bound what it asks for, and a ``STRICT_SPREAD`` placement group whose bundles need one
more node brings up a worker of the right group. Every request of the autoscaler is asserted on
in the API server's audit log (``--audit-log-path``). Resources stay tiny: a head with no CPU,
workers of one CPU, an 8 s idle timeout.

The same scenario runs with KubeRay v1.7.0's operator (``$RAYOP_KUBERAY_BINARY``, else the one
``scripts/controlplane-build kuberay`` caches) on ``rayop apiserver --real-ray``: the plane
serves both operators alike. The four cases (operator x autoscaler version) run one after the
other: run side by side on one plane (both versions' clusters at once) a loaded 2-core machine
took 110 s to start the four workers of the first tasks, and a worker done early went idle
before its task's driver returned.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .realray_support import Kubectl, kuberay_on_apiserver, rayop_up_kubectl

pytestmark = pytest.mark.realray

IDLE_TIMEOUT = 8

CLUSTER = """
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: {name}
spec:
  rayVersion: "2.60.0"
  enableInTreeAutoscaling: true
  autoscalerOptions:
    version: {version}
    idleTimeoutSeconds: {idle}
  headGroupSpec:
    rayStartParams: {{num-cpus: "0"}}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.60.0
          resources: {{limits: {{cpu: "1", memory: 2Gi}}}}
  workerGroupSpecs:
  - groupName: cpu
    replicas: 0
    minReplicas: 0
    maxReplicas: 2
    rayStartParams: {{num-cpus: "1"}}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.60.0
          resources: {{limits: {{cpu: "1", memory: 1Gi}}}}
  - groupName: accel
    replicas: 0
    minReplicas: 0
    maxReplicas: 1
    rayStartParams:
      num-cpus: "0"
      num-gpus: "1"
      resources: '"{{\\"Custom\\": 1}}"'
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.60.0
          resources: {{limits: {{cpu: "1", memory: 1Gi}}}}
"""

DRIVER = """
import os, time, ray
ray.init()
@ray.remote(num_cpus=0)
class Gate:
    def __init__(self):
        self.arrived = 0
    def arrive(self):
        self.arrived += 1
    def count(self):
        return self.arrived
def where(gate, tasks):
    time.sleep({sleep})
    # With a gate every task returns once all have started: the workers go idle together.
    if gate is not None:
        ray.get(gate.arrive.remote())
        while ray.get(gate.count.remote()) < tasks:
            time.sleep(0.2)
    return os.environ["RAYOP_POD_IP"]
options = [{options}]
gate = Gate.remote() if {together} else None
tasks = [ray.remote(where).options(**o).remote(gate, len(options)) for o in options]
print("ran on", *ray.get(tasks))
"""


def driver(*options: str, sleep: float = 0, together: bool = False) -> str:
    """A driver running one task per ``options`` (``dict(...)`` text); prints their pod IPs.

    ``together``: no task ends before all have started (a worker that finished early would
    otherwise go idle, and be deleted, before a slower one had started).
    """
    return DRIVER.format(sleep=sleep, options=", ".join(options), together=together)


@dataclass
class Autoscaled:
    """A plane with an autoscaling RayCluster, and the plane's audit log.

    Attributes:
        kubectl: kubectl for the plane.
        name: The RayCluster (and its head's ServiceAccount).
        label: The case: ``<operator>-<autoscaler version>``.
        audit_log: The ``--audit-log-path`` file.
        scaled: The worker each group got for the first tasks (group -> pod name).
    """

    kubectl: Kubectl
    name: str
    label: str
    audit_log: Path
    scaled: dict[str, str] = field(default_factory=dict)

    @property
    def user(self) -> str:
        """The autoscaler's user: the head's ServiceAccount (named as the cluster)."""
        return f"system:serviceaccount:default:{self.name}"

    def audit(self, **match: Any) -> list[dict[str, Any]]:
        """The audit records (JSON lines) whose fields equal ``match``."""
        records = [json.loads(line) for line in self.audit_log.read_text().splitlines()]
        return [r for r in records if all(r.get(k) == v for k, v in match.items())]

    def group(self, name: str) -> dict[str, Any]:
        """The worker group's spec as stored now."""
        cluster = self.kubectl.json("raycluster", self.name)
        return next(g for g in cluster["spec"]["workerGroupSpecs"] if g["groupName"] == name)

    def workers(self, group: str) -> list[dict[str, Any]]:
        """The group's worker pods that are not being deleted."""
        selector = f"ray.io/cluster={self.name},ray.io/group={group}"
        items = self.kubectl.json("pods", "-l", selector)["items"]
        return [p for p in items if not p["metadata"].get("deletionTimestamp")]

    def run_driver(self, code: str, timeout: float = 240) -> str:
        """Runs a Ray driver in the head container (``kubectl exec``); returns its output."""
        [head] = self.kubectl.pod_names(f"ray.io/cluster={self.name},ray.io/node-type=head")
        proc = self.kubectl.run(
            "exec", head, "-c", "ray-head", "--", "python", "-c", code, timeout=timeout
        )
        return proc.stdout

    def wait(self, what: str, check: Any, timeout: float) -> float:
        """Polls ``check()`` until it is true; returns the seconds it took."""
        start = time.monotonic()
        while not check():
            if time.monotonic() - start > timeout:
                raise AssertionError(f"{what}: not after {timeout} s")
            time.sleep(1.0)
        return time.monotonic() - start


@pytest.fixture(scope="module", params=["rayop-v1", "rayop-v2", "kuberay-v1", "kuberay-v2"])
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, ray_env: str
) -> Iterator[Autoscaled]:
    """The autoscaling cluster ``auto-<version>`` ready: with rayop on ``rayop up --real-ray``,
    or with KubeRay on ``rayop apiserver --real-ray``."""
    operator, version = str(request.param).split("-")
    workdir = tmp_path_factory.mktemp(f"realray-autoscaler-{request.param}")
    audit_log = workdir / "audit.log"
    plane: contextlib.AbstractContextManager[Kubectl]
    if operator == "kuberay":
        plane = kuberay_on_apiserver(workdir, ray_env, "--audit-log-path", str(audit_log))
    else:
        plane = rayop_up_kubectl(workdir, ray_env, "--audit-log-path", str(audit_log))
    with plane as kubectl:
        name = f"auto-{version}"
        start = time.monotonic()
        kubectl.apply(CLUSTER.format(name=name, version=version, idle=IDLE_TIMEOUT))
        kubectl.wait_for(f"raycluster/{name}", ".status.state", "ready", timeout=300)
        up = Autoscaled(kubectl, name, str(request.param), audit_log)
        # The autoscaler has read the RayCluster with its own token: it runs.
        up.wait("the autoscaler's first request", lambda: up.audit(user=up.user), 120)
        print(f"\n{request.param}: apply -> autoscaler running in {time.monotonic() - start:.1f} s")
        yield up


def test_tasks_needing_a_cpu_a_gpu_and_a_custom_resource_scale_their_own_groups(
    cluster: Autoscaled,
) -> None:
    start = time.monotonic()
    out = cluster.run_driver(
        driver(
            "dict(num_cpus=1)",
            "dict(num_cpus=0, num_gpus=1)",
            "dict(num_cpus=0, resources={'Custom': 1})",
            together=True,
        )
    )
    print(
        f"\n{cluster.label}: a 1-CPU, a GPU and a Custom task on a 0-CPU cluster ran in "
        f"{time.monotonic() - start:.1f} s"
    )
    [worker] = cluster.workers("cpu")
    [accel] = cluster.workers("accel")
    cluster.scaled = {"cpu": worker["metadata"]["name"], "accel": accel["metadata"]["name"]}
    cpu_ip, accel_ip = worker["status"]["podIP"], accel["status"]["podIP"]
    assert f"ran on {cpu_ip} {accel_ip} {accel_ip}" in out, out
    assert cluster.group("cpu")["replicas"] == 1 and cluster.group("accel")["replicas"] == 1
    patches = cluster.audit(
        user=cluster.user, verb="patch", resource="rayclusters", name=cluster.name, code=200
    )
    assert patches, "the autoscaler never patched the RayCluster"
    reads = {(r["verb"], r["resource"]) for r in cluster.audit(user=cluster.user, code=200)}
    assert {("get", "rayclusters"), ("list", "pods")} <= reads, reads
    refused = [r for r in cluster.audit(user=cluster.user) if r["code"] >= 400]
    assert refused == [], refused
    # What allowed it: the Role rayop made for the head's ServiceAccount.
    role = cluster.kubectl.json("role", cluster.name)
    granted = {
        (res, verb) for rule in role["rules"] for res in rule["resources"] for verb in rule["verbs"]
    }
    assert {("rayclusters", "patch"), ("pods", "list")} <= granted, granted


def test_the_idle_workers_go_through_workers_to_delete(cluster: Autoscaled) -> None:
    assert set(cluster.scaled) == {"cpu", "accel"}, "the scale-up test did not run first"
    took = cluster.wait(
        "the idle workers deleted",
        lambda: not cluster.workers("cpu") and not cluster.workers("accel"),
        180,
    )
    print(
        f"\n{cluster.label}: the idle workers went {took:.1f} s after the tasks "
        f"(idle {IDLE_TIMEOUT} s)"
    )
    assert cluster.group("cpu")["replicas"] == 0 and cluster.group("accel")["replicas"] == 0
    # Both operators report the deletions as DeletedWorkerPod events of the RayCluster; the
    # second, of the same reason and object within minutes, may be folded into the first's
    # series (client-go's events recorder keys a series without the message).
    names = list(cluster.scaled.values())
    events = cluster.kubectl.json("events", "--field-selector", "reason=DeletedWorkerPod")["items"]
    assert any(n in e["message"] for e in events for n in names), [e["message"] for e in events]
    asked = cluster.audit(user=cluster.user, verb="patch", resource="rayclusters", code=200)
    for name in names:
        # KubeRay may send the delete again while the pod terminates: the first one did it.
        deletes = cluster.audit(verb="delete", resource="pods", name=name)
        deleted = next(r for r in deletes if r["code"] < 300)
        created = cluster.audit(verb="create", resource="pods", name=name, code=201)[0]
        # The autoscaler asked for it (workersToDelete) after the pod was made...
        assert any(created["time"] <= r["time"] <= deleted["time"] for r in asked), (
            asked,
            created,
            deleted,
        )
        # ... and the operator deleted it.
        assert all(r["user"] != cluster.user for r in deletes), deletes


def test_min_and_max_replica_edits_are_honoured(cluster: Autoscaled) -> None:
    kubectl, name = cluster.kubectl, cluster.name
    kubectl.run(
        "patch", "raycluster", name, "--type=json", "-p",
        json.dumps([
            {"op": "replace", "path": "/spec/workerGroupSpecs/0/minReplicas", "value": 1},
            {"op": "replace", "path": "/spec/workerGroupSpecs/0/maxReplicas", "value": 1},
        ]),
    )  # fmt: skip
    cluster.wait("a worker for minReplicas 1", lambda: len(cluster.workers("cpu")) == 1, 180)
    [kept] = cluster.workers("cpu")
    time.sleep(IDLE_TIMEOUT + 6)  # idle past the timeout and an autoscaler pass: kept
    assert [w["metadata"]["uid"] for w in cluster.workers("cpu")] == [kept["metadata"]["uid"]]
    # Two 1-CPU tasks of 5 s at once: maxReplicas 1 keeps them on the one worker, in turn.
    out = cluster.run_driver(driver("dict(num_cpus=1)", "dict(num_cpus=1)", sleep=5))
    ip = kept["status"]["podIP"]
    assert f"ran on {ip} {ip}" in out, out
    prefix = f"{name}-cpu-worker-"
    created = [
        r["name"]
        for r in cluster.audit(verb="create", resource="pods", code=201)
        if r["name"].startswith(prefix)
    ]
    assert len(created) == 2, created  # one for the first task, one for minReplicas
    # The autoscaler asked for no more than maxReplicas. (It patches replicas when it launches or
    # ends a worker; the minReplicas worker is the operator's, so replicas may still read 0.)
    assert cluster.group("cpu")["replicas"] <= 1 and len(cluster.workers("cpu")) == 1


PLACEMENT = """
import os, ray
from ray.util.placement_group import placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy
ray.init()
pg = placement_group([{"CPU": 1}, {"CPU": 1}], strategy="STRICT_SPREAD")
ray.get(pg.ready(), timeout=180)
def where():
    return os.environ["RAYOP_POD_IP"]
strategies = [PlacementGroupSchedulingStrategy(pg, placement_group_bundle_index=i) for i in (0, 1)]
tasks = [ray.remote(where).options(num_cpus=1, scheduling_strategy=s).remote() for s in strategies]
print("ran on", *ray.get(tasks))
"""


def test_a_strict_spread_placement_group_scales_the_cpu_group(cluster: Autoscaled) -> None:
    # After the min/max edits one cpu worker is kept (minReplicas 1); with maxReplicas 2 again,
    # two 1-CPU bundles on distinct nodes need one more worker of the cpu group (the head has no
    # CPU, the accel workers none either).
    [kept] = cluster.workers("cpu")
    cluster.kubectl.run(
        "patch", "raycluster", cluster.name, "--type=json", "-p",
        json.dumps([{"op": "replace", "path": "/spec/workerGroupSpecs/0/maxReplicas", "value": 2}]),
    )  # fmt: skip
    created_before = len(cluster.audit(verb="create", resource="pods", code=201))
    start = time.monotonic()
    out = cluster.run_driver(PLACEMENT)
    print(
        f"\n{cluster.label}: a STRICT_SPREAD placement group of two 1-CPU bundles ran in "
        f"{time.monotonic() - start:.1f} s"
    )
    workers = cluster.workers("cpu")
    assert len(workers) == 2 and kept["metadata"]["uid"] in {w["metadata"]["uid"] for w in workers}
    ips = sorted(w["status"]["podIP"] for w in workers)
    # Only the driver's own line: Ray also prints the autoscaler's events to the driver's
    # stdout ("(autoscaler +8s) Resized to 2 CPUs."), before and after it.
    [line] = [ln for ln in out.splitlines() if ln.startswith("ran on ")]
    ran = line.removeprefix("ran on ").split()
    assert sorted(ran) == ips, out  # one bundle on each worker
    assert cluster.group("cpu")["replicas"] == 2 and cluster.group("accel")["replicas"] == 0
    created = [r["name"] for r in cluster.audit(verb="create", resource="pods", code=201)]
    assert [n for n in created[created_before:] if "-accel-" in n] == [], created
