"""Chaos campaign: rayop under many faults at once, checked from the plane's own record (issue 34;
not a test: ``tests/bench/test_chaos_campaign.py`` runs one short seed in the fast tier).

For every seed, on a fresh embedded control plane in this process (its API server, simulated
kubelet, controller-manager and Ray heads), rayop's operator runs as a child process (``rayop
run``, its own ServiceAccount, leader election on, dashboards through the API server's services
proxy) while:

- users create, scale, suspend, delete and replace RayClusters, submit RayJobs in the four
  submission modes, upgrade RayServices and edit them (benchmarks/chaos_workload.py);
- faults hit at random (benchmarks/chaos_schedule.py, benchmarks/chaos_faults.py): the operator
  SIGKILLed (at a random instant, right after a pod create commits, or right after a Ray head
  accepts a job submission) and started again at once; storms of 429/500 answers, slow calls,
  409s, dropped watches with a short history (resumes get 410 Gone and relist), watch lag, and
  Ray dashboards down, slow or answering malformed JSON and wrong types; the leader Lease lost
  while the API is slow.

Then the faults stop and every object must converge within ``--converge-seconds``. The invariants
(benchmarks/chaos_record.py) are checked from the API server's change feed and audit and the
simulated Ray heads' submission log. A seed fixes the whole plan (faults, their settings and
times, user actions), so a failing seed replays the same schedule.

``--broken expectations-off`` runs a deliberately broken operator (scale expectations always
satisfied; benchmarks/chaos_operator.py) to show that the checker catches it.

Run the full campaign (about 3 to 4 minutes per seed on a loaded 2-core machine)::

    .venv/bin/python benchmarks/chaos.py --seeds 1-10 --json chaos.json

and the broken operator, under storms of the faults that make a pod cache lag (scale expectations
matter only then; the same command without ``--broken`` finds nothing)::

    .venv/bin/python benchmarks/chaos.py --seeds 1,2 --duration 40 --kills 4 --storms 5 \
        --lease-losses 0 --storm-parts watch-lag,watch-drop,api-conflicts --broken expectations-off

Exit status: 0 when no invariant was violated, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from chaos_faults import FaultDriver
from chaos_operator import BROKEN, OperatorProcess
from chaos_record import Record, Violation
from chaos_schedule import STORM_PARTS, Plan, make_plan
from chaos_workload import Workload

from rayop.kube.resources import NAMESPACES, SERVICE_ACCOUNTS
from rayop.sim.dashboard.head import DashboardConfig
from rayop.testing import FAST_KUBELET, PlaneUnderTest, open_control_plane
from rayop.testing.readiness import raycluster_converged, running_and_ready

__all__ = ["SeedResult", "run_seed"]

log = logging.getLogger("chaos")

NAMESPACE = "chaos"
SYSTEM_NAMESPACE = "chaos-system"
OPERATOR_SA = "rayop"
OPERATOR_USER = f"system:serviceaccount:{SYSTEM_NAMESPACE}:{OPERATOR_SA}"
HISTORY_SIZE = 100
"""Watch history kept by the plane: small, so that a watch resumed after a drop is often too old
and gets 410 Gone (a relist)."""
DASHBOARD = DashboardConfig(
    job_pending_seconds=0.3, job_run_seconds=2.0, job_stop_seconds=0.2,
    serve_deploy_seconds=0.5, submitter_poll_seconds=0.2,
)  # fmt: skip
RBAC_GROUP = "rbac.authorization.k8s.io"
STEP_TIMEOUT = 300.0
"""Seconds after the fault phase by which every planned step must have finished."""


@dataclass
class SeedResult:
    """What one seed did and found."""

    seed: int
    broken: str | None
    wall_seconds: float = 0.0
    converge_seconds: float | None = None
    faults: dict[str, int] = field(default_factory=dict)
    operator_starts: int = 0
    objects: dict[str, int] = field(default_factory=dict)
    user_actions: dict[str, int] = field(default_factory=dict)
    passes: int = 0
    pod_creates: int = 0
    submissions: int = 0
    checks: dict[str, int] = field(default_factory=dict)
    rayjob_outcomes: dict[str, int] = field(default_factory=dict)
    operator_api: dict[str, int] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)


async def _grant_operator(plane: PlaneUnderTest, kubeconfig: Path) -> None:
    """Makes the operator's ServiceAccount (all permissions, so that its audit user name is its
    own) and writes its kubeconfig."""
    from rayop.kube.resource import Resource

    cluster_roles = Resource(RBAC_GROUP, "v1", "clusterroles", "ClusterRole", namespaced=False)
    bindings = Resource(
        RBAC_GROUP, "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
    )
    client = plane.client
    await client.create(NAMESPACES, {"metadata": {"name": SYSTEM_NAMESPACE}})
    await client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
    await client.create(
        SERVICE_ACCOUNTS, {"metadata": {"name": OPERATOR_SA, "namespace": SYSTEM_NAMESPACE}},
        namespace=SYSTEM_NAMESPACE,
    )  # fmt: skip
    everything = {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}
    await client.create(cluster_roles, {"metadata": {"name": "chaos-operator"},
                                        "rules": [everything, {"nonResourceURLs": ["*"], "verbs": ["*"]}]})  # fmt: skip
    await client.create(
        bindings,
        {
            "metadata": {"name": "chaos-operator"},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "chaos-operator"},
            "subjects": [{"kind": "ServiceAccount", "name": OPERATOR_SA, "namespace": SYSTEM_NAMESPACE}],
        },
    )  # fmt: skip
    token = plane.cp.issue_service_account_token(SYSTEM_NAMESPACE, OPERATOR_SA)
    text = plane.cp.kubeconfig_text(token, namespace=SYSTEM_NAMESPACE)
    await asyncio.to_thread(kubeconfig.write_text, text)


class PassCounter:
    """Scrapes the operator's reconcile counter every second; sums the last value of each start
    (a kill loses at most a second's passes from the count)."""

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}/metrics"
        self.finished = 0
        self.current = 0
        self._start_seen = 0

    def total(self) -> int:
        return self.finished + self.current

    async def run(self, operator: OperatorProcess) -> None:
        async with aiohttp.ClientSession() as session:
            while True:
                await asyncio.sleep(1.0)
                if operator.starts != self._start_seen:
                    self.finished += self.current
                    self.current, self._start_seen = 0, operator.starts
                with contextlib.suppress(aiohttp.ClientError, TimeoutError, OSError):
                    async with session.get(self.url, timeout=aiohttp.ClientTimeout(total=2)) as r:
                        text = await r.text()
                    found = re.findall(
                        r"^controller_runtime_reconcile_total\{[^}]*\} (\S+)$", text, re.M
                    )
                    if found:
                        self.current = max(self.current, int(sum(float(v) for v in found)))


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def pending_objects(record: Record) -> list[str]:
    """What has not converged yet (empty: everything has)."""
    pending: list[str] = []
    objs = record.objects
    pods = list(objs("pods").values())
    for name, rc in objs("rayclusters").items():
        if (rc.get("metadata") or {}).get("deletionTimestamp"):
            pending.append(f"RayCluster {name} still being deleted")
            continue
        live = [
            p for p in pods
            if (p["metadata"].get("labels") or {}).get("ray.io/cluster") == name
            and not p["metadata"].get("deletionTimestamp")
        ]  # fmt: skip
        if (rc.get("spec") or {}).get("suspend"):
            if live or (rc.get("status") or {}).get("state") != "suspended":
                pending.append(f"RayCluster {name} not suspended")
        elif not raycluster_converged(rc, live):
            status = rc.get("status") or {}
            ready = sum(1 for p in live if running_and_ready(p))
            pending.append(
                f"RayCluster {name} not ready (state {status.get('state')}, generation "
                f"{rc['metadata'].get('generation')} observed {status.get('observedGeneration')}, "
                f"desired workers {status.get('desiredWorkerReplicas')} ready "
                f"{status.get('readyWorkerReplicas')}, {len(live)} live pods, {ready} ready)"
            )
    for name, job in objs("rayjobs").items():
        status = job.get("status") or {}
        if status.get("jobDeploymentStatus") not in ("Complete", "Failed"):
            pending.append(f"RayJob {name} {status.get('jobDeploymentStatus')}")
        elif (job.get("spec") or {}).get("shutdownAfterJobFinishes") and any(
            record.rayjob_of_cluster(c) == name for c in objs("rayclusters")
        ):
            pending.append(f"RayJob {name}'s cluster not deleted after it finished")
    for name, rs in objs("rayservices").items():
        status = rs.get("status") or {}
        active = (status.get("activeServiceStatus") or {}).get("rayClusterName")
        pending_cluster = (status.get("pendingServiceStatus") or {}).get("rayClusterName")
        svc = objs("services").get(f"{name}-serve-svc") or {}
        selected = ((svc.get("spec") or {}).get("selector") or {}).get("ray.io/cluster")
        if (
            status.get("serviceStatus") != "Running"
            or pending_cluster
            or not active
            or selected != active
        ):
            pending.append(f"RayService {name} not serving from one settled cluster")
    for plural in ("pods", "services", "jobs", "rayjobs", "rayservices"):
        for name, obj in objs(plural).items():
            if (obj.get("metadata") or {}).get("deletionTimestamp"):
                pending.append(f"{plural}/{name} still being deleted")
    uids = {str(o["metadata"].get("uid")) for k in ("rayclusters", "rayjobs", "rayservices", "jobs")
            for o in objs(k).values()}  # fmt: skip
    for plural in ("pods", "services", "rayclusters", "jobs"):
        for name, obj in objs(plural).items():
            for ref in obj["metadata"].get("ownerReferences") or []:
                if (
                    ref.get("kind") in ("RayCluster", "RayJob", "RayService", "Job")
                    and ref.get("uid") not in uids
                ):
                    pending.append(f"{plural}/{name} outlives its owner")
    return pending


@contextlib.asynccontextmanager
async def _plane() -> AsyncIterator[PlaneUnderTest]:
    async with open_control_plane(
        kubelet=FAST_KUBELET, dashboard=DASHBOARD, history_size=HISTORY_SIZE
    ) as plane:
        yield plane


async def run_seed(
    plan: Plan, *, broken: str | None, converge_seconds: float, workdir: Path
) -> SeedResult:
    """Runs one seed's plan and returns what it found."""
    result = SeedResult(plan.seed, broken)
    began = time.monotonic()
    async with _plane() as plane:
        cp = plane.cp
        kubeconfig = workdir / f"operator-{plan.seed}.kubeconfig"
        await _grant_operator(plane, kubeconfig)
        metrics_port = _free_port()
        operator = OperatorProcess(
            kubeconfig, workdir / f"operator-{plan.seed}.log", SYSTEM_NAMESPACE, broken=broken,
            extra_args=(f"--metrics-addr=127.0.0.1:{metrics_port}",),
        )  # fmt: skip
        record = Record(cp, NAMESPACE, OPERATOR_USER)
        record.start()
        driver = FaultDriver(cp, operator, record, SYSTEM_NAMESPACE)
        workload = Workload(cp, plane.client, NAMESPACE)
        passes = PassCounter(metrics_port)
        await operator.start()
        background = [
            asyncio.create_task(driver.watch_operator(), name="watch operator"),
            asyncio.create_task(passes.run(operator), name="count passes"),
        ]
        try:
            await workload.populate()
            t0 = time.monotonic()
            kills = [f for f in plan.faults if f.kind.startswith("kill")]
            tasks = [asyncio.create_task(driver.kills(kills, t0), name="kills")]
            tasks += [
                asyncio.create_task(_at(t0, f.at, _fault(driver, f)), name=f"{f.kind} at {f.at}")
                for f in plan.faults
                if not f.kind.startswith("kill")
            ]
            tasks += [
                asyncio.create_task(_at(t0, a.at, workload.act(a)), name=f"{a.kind} at {a.at}")
                for a in plan.actions
            ]
            _, unfinished = await asyncio.wait(tasks, timeout=plan.duration + STEP_TIMEOUT)
            if unfinished:
                names = sorted(t.get_name() for t in unfinished)
                for task in unfinished:
                    task.cancel()
                raise RuntimeError(f"planned steps still running {STEP_TIMEOUT:g} s late: {names}")
            for task in tasks:
                task.result()  # a step that failed fails the seed
            driver.clear()
            quiet_from = time.monotonic()
            converged = False
            pending: list[str] = []
            while time.monotonic() - quiet_from < converge_seconds:
                pending = pending_objects(record)
                if not pending:
                    converged = True
                    result.converge_seconds = round(time.monotonic() - quiet_from, 2)
                    break
                await asyncio.sleep(0.5)
            record.after_run()
            record.check_final(converged, pending)
        finally:
            driver.stopping = True
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            await workload.stop()
            await operator.stop()
            record.stop()
        result.faults = dict(sorted(driver.done.items()))
        result.operator_starts = operator.starts
        result.objects = {k: len(v) for k, v in sorted(record.objects_seen.items())}
        result.user_actions = dict(sorted(workload.done.items()))
        result.passes = passes.total()
        result.pod_creates = record.pod_creates
        result.submissions = sum(1 for s in cp.dashboards.submissions if s.namespace == NAMESPACE)
        result.checks = dict(record.checks)
        result.rayjob_outcomes = dict(Counter(
            str((j.get("status") or {}).get("jobDeploymentStatus"))
            for j in record.objects("rayjobs").values()
        ))  # fmt: skip
        result.violations = list(record.violations)
        audit = cp.audit
        result.operator_api = {
            "requests": audit.count(user=OPERATOR_USER),
            "lists": audit.count(user=OPERATOR_USER, verb="list"),
            "watches": audit.count(user=OPERATOR_USER, verb="watch"),
            **{str(c): audit.count(user=OPERATOR_USER, code=c) for c in (409, 429, 500)},
        }
    result.wall_seconds = round(time.monotonic() - began, 1)
    return result


async def _at(t0: float, at: float, what: Any) -> None:
    await asyncio.sleep(max(0.0, t0 + at - time.monotonic()))
    try:
        await what
    except Exception:
        log.exception("a planned step failed")
        raise


async def _fault(driver: FaultDriver, fault: Any) -> None:
    if fault.kind == "storm":
        await driver.storm(fault)
    else:
        await driver.lease_lost(fault)


def parse_seeds(text: str) -> list[int]:
    """``"1-10"`` or ``"3,5,8"`` -> the seeds."""
    seeds: list[int] = []
    for part in text.split(","):
        if "-" in part:
            low, high = part.split("-", 1)
            seeds.extend(range(int(low), int(high) + 1))
        else:
            seeds.append(int(part))
    return seeds


def summary(results: list[SeedResult]) -> dict[str, Any]:
    """Totals over seeds."""
    faults: Counter[str] = Counter()
    objects: Counter[str] = Counter()
    violations: Counter[str] = Counter()
    for r in results:
        faults.update(r.faults)
        objects.update(r.objects)
        violations.update(v.invariant for v in r.violations)
    kills = sum(n for k, n in faults.items() if k.startswith("kill"))
    return {
        "seeds": [r.seed for r in results],
        "kills": kills,
        "storms": faults.get("storm", 0),
        "lease_losses": faults.get("lease-lost", 0),
        "faults": dict(sorted(faults.items())),
        "objects": dict(sorted(objects.items())),
        "passes": sum(r.passes for r in results),
        "pod_creates": sum(r.pod_creates for r in results),
        "submissions": sum(r.submissions for r in results),
        "violations": dict(violations),
        "violation_count": sum(violations.values()),
        "wall_seconds": round(sum(r.wall_seconds for r in results), 1),
        "slowest_convergence_seconds": max(
            (r.converge_seconds for r in results if r.converge_seconds is not None), default=None
        ),
    }


async def campaign(args: argparse.Namespace) -> list[SeedResult]:
    results: list[SeedResult] = []
    storm_parts = tuple(p for p in args.storm_parts.split(",") if p)
    unknown = sorted(set(storm_parts) - set(STORM_PARTS))
    if unknown or not storm_parts:
        raise SystemExit(f"--storm-parts: unknown {unknown}; known: {', '.join(STORM_PARTS)}")
    with tempfile.TemporaryDirectory(prefix="rayop-chaos-") as tmp:
        workdir = Path(args.workdir) if args.workdir else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        for seed in parse_seeds(args.seeds):
            plan = make_plan(seed, duration=args.duration, kills=args.kills,
                             storms=args.storms, lease_losses=args.lease_losses,
                             storm_parts=storm_parts)  # fmt: skip
            result = await run_seed(plan, broken=args.broken,
                                    converge_seconds=args.converge_seconds, workdir=workdir)  # fmt: skip
            results.append(result)
            print(json.dumps({k: v for k, v in asdict(result).items() if k != "violations"}))
            for v in result.violations[:20]:
                print(f"  VIOLATION seed {seed} {v.invariant}: {v.subject}: {v.detail}")
            sys.stdout.flush()
    return results


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="1-10", help='e.g. "1-10" or "3,7"')
    parser.add_argument(
        "--duration", type=float, default=150.0, help="fault phase, seconds per seed"
    )
    parser.add_argument("--kills", type=int, default=21, help="operator kills per seed")
    parser.add_argument("--storms", type=int, default=3, help="fault storms per seed")
    parser.add_argument("--lease-losses", type=int, default=1, help="lost Leases per seed")
    parser.add_argument("--converge-seconds", type=float, default=90.0,
                        help="how long every object has to converge once the faults stop")  # fmt: skip
    parser.add_argument("--broken", choices=BROKEN, default=None,
                        help="run a deliberately broken operator (the checker must catch it)")  # fmt: skip
    parser.add_argument(
        "--storm-parts",
        default=",".join(STORM_PARTS),
        help="the fault kinds storms draw from (comma-separated; default: all)",
    )
    parser.add_argument("--workdir", default="", help="keep kubeconfigs and operator logs here")
    parser.add_argument("--json", default="", help="write the per-seed results and totals here")
    args = parser.parse_args()
    results = asyncio.run(campaign(args))
    totals = summary(results)
    print(json.dumps(totals, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"totals": totals, "seeds": [asdict(r) for r in results]}, indent=2, default=str
        ))  # fmt: skip
    sys.exit(1 if totals["violation_count"] else 0)


if __name__ == "__main__":
    main()
