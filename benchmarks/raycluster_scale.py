"""Benchmark: N RayClusters x W workers on the embedded control plane (not a test).

For each ``--reconcile-concurrency`` value, starts ``rayop apiserver`` (plain HTTP, pods take
``--pod-start`` seconds from creation to Running and Ready) in a child process, runs rayop's
operator (Manager + RayCluster controller, KubeRay's client defaults qps 100 / burst 200) in this
process, creates every RayCluster at once and waits until all are ready. Reports:

- time until all clusters are ready (state ``ready`` and every worker ready, as seen by the
  operator's own RayCluster cache, so waiting adds no API traffic);
- API requests by verb made after the CRDs were installed (the API server's
  ``apiserver_request_total``; includes the benchmark's own RayCluster creates);
- operator CPU seconds (``time.process_time()`` of this process, which holds only the operator
  and the benchmark driver: the control plane runs in the child, whose CPU is shown apart);
- pod creates (must equal N x (W + 1): no duplicates) and pod deletes (must be 0).

Run::

    .venv/bin/python benchmarks/raycluster_scale.py [--clusters 100] [--workers 10] \
        [--reconcile-concurrency 1,4] [--pod-start 1.0] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psutil
import yaml
from prometheus_client import CollectorRegistry

from rayop.api.crds import build_crds
from rayop.controllers.assembly.build import build_operator
from rayop.controllers.assembly.operator_settings import OperatorSettings
from rayop.controllers.config.options import OperatorOptions
from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig
from rayop.kube.errors import NotFound
from rayop.kube.resources import CRDS, RAY_CLUSTERS
from rayop.runtime.manager import Manager
from rayop.runtime.metrics import OperatorMetrics

_METRIC = re.compile(
    r'apiserver_request_total\{code="(\d+)",resource="([^"]*)",subresource="([^"]*)",verb="([^"]*)"\} (\d+)'
)


def start_apiserver(workdir: Path, pod_start: float) -> tuple[subprocess.Popen[str], str, str]:
    """Starts ``rayop apiserver`` in a child process; returns it, its URL and token."""
    kubeconfig = workdir / "kubeconfig.yaml"
    cmd = [
        sys.executable, "-m", "rayop", "apiserver", "--no-tls", "--kubeconfig-out", str(kubeconfig),
        "--pod-pending-delay", "0", "--pod-running-delay", str(pod_start), "--pod-ready-delay", "0",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    proc.stdout.readline()
    doc = yaml.safe_load(kubeconfig.read_text())
    return proc, doc["clusters"][0]["cluster"]["server"], doc["users"][0]["user"]["token"]


def raycluster(name: str, workers: int) -> dict[str, Any]:
    """Returns a RayCluster with one worker group of ``workers`` replicas."""
    image = "rayproject/ray:2.46.0"
    template = {
        "spec": {
            "containers": [
                {
                    "name": "ray",
                    "image": image,
                    "resources": {"limits": {"cpu": "1", "memory": "2Gi"}},
                }
            ]
        }
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "rayVersion": "2.46.0",
            "headGroupSpec": {"rayStartParams": {}, "template": template},
            "workerGroupSpecs": [
                {"groupName": "workers", "replicas": workers, "minReplicas": 0, "maxReplicas": 1000,
                 "rayStartParams": {}, "template": template}
            ],
        },
    }  # fmt: skip


async def request_counts(client: KubeClient) -> Counter[tuple[str, str]]:
    """Returns the API server's request counts by (verb, resource[/subresource])."""
    _, body = await client.request("GET", "/metrics")
    counts: Counter[tuple[str, str]] = Counter()
    for code, resource, sub, verb, value in _METRIC.findall(body.decode()):
        del code
        counts[(verb, f"{resource}/{sub}" if sub else resource)] += int(value)
    return counts


async def install_crds(client: KubeClient) -> None:
    """Creates the CRDs and waits until RayClusters are served."""
    for crd in build_crds():
        await client.create(CRDS, crd)
    while True:
        try:
            await client.list(RAY_CLUSTERS, namespace="default")
            return
        except NotFound:
            await asyncio.sleep(0.05)


def all_ready(manager: Manager[KubeClient], clusters: int, workers: int) -> bool:
    """Tells whether the operator's cache shows every RayCluster ready with all workers ready."""
    cached = manager.informers.informer(RAY_CLUSTERS).list("default")
    ready = [
        rc
        for rc in cached
        if (rc.get("status") or {}).get("state") == "ready"
        and (rc.get("status") or {}).get("readyWorkerReplicas") == workers
    ]
    return len(ready) == clusters


async def run_once(
    *,
    clusters: int,
    workers: int,
    concurrency: int,
    pod_start: float,
    qps: float = 100.0,
    burst: int = 200,
) -> dict[str, Any]:
    """Runs one scenario on a fresh control plane; returns its figures."""
    with tempfile.TemporaryDirectory(prefix="rayop-bench-") as tmp:
        proc, url, token = start_apiserver(Path(tmp), pod_start)
        child = psutil.Process(proc.pid)
        try:
            config = KubeConfig.for_server(url, token=token)
            async with (
                KubeClient(config, qps=-1) as user,
                KubeClient(config, qps=qps, burst=burst) as operator_client,
            ):
                await install_crds(user)
                registry = CollectorRegistry()
                settings = OperatorSettings(
                    reconcile_concurrency=concurrency,
                    metrics_addr="0",
                    health_probe_bind_address="0",
                    enable_leader_election=False,
                    options=OperatorOptions(),
                )
                manager = build_operator(
                    operator_client, settings, OperatorMetrics(registry), kinds=["RayCluster"]
                ).manager
                task = asyncio.create_task(manager.run())
                await manager.wait_ready()
                before = await request_counts(user)
                child_cpu0 = sum(child.cpu_times()[:2])
                cpu0, t0 = time.process_time(), time.monotonic()
                await asyncio.gather(
                    *(
                        user.create(RAY_CLUSTERS, raycluster(f"rc-{i:03d}", workers))
                        for i in range(clusters)
                    )
                )
                while not all_ready(manager, clusters, workers):
                    await asyncio.sleep(0.05)
                elapsed, cpu = time.monotonic() - t0, time.process_time() - cpu0
                child_cpu = sum(child.cpu_times()[:2]) - child_cpu0
                after = await request_counts(user)
                labels = {"controller": "raycluster"}
                errors = registry.get_sample_value(
                    "controller_runtime_reconcile_errors_total", labels
                )
                reconciles = sum(
                    registry.get_sample_value(
                        "controller_runtime_reconcile_total", {**labels, "result": result}
                    )
                    or 0
                    for result in ("success", "error", "requeue", "requeue_after")
                )
                await manager.stop()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(task, 10)
        finally:
            proc.terminate()
            proc.wait(10)
    delta = after - before
    by_verb: Counter[str] = Counter()
    for (verb, _resource), n in delta.items():
        by_verb[verb] += n
    return {
        "reconcile_concurrency": concurrency,
        "clusters": clusters,
        "workers": workers,
        "pod_start_seconds": pod_start,
        "operator_qps": qps,
        "operator_burst": burst,
        "seconds_until_all_ready": round(elapsed, 2),
        "operator_cpu_seconds": round(cpu, 2),
        "apiserver_cpu_seconds": round(child_cpu, 2),
        "requests_by_verb": dict(sorted(by_verb.items())),
        "requests_by_verb_and_resource": {f"{v} {r}": n for (v, r), n in sorted(delta.items())},
        "reconciles": int(reconciles or 0),
        "reconcile_errors": int(errors or 0),
        "pod_creates": delta.get(("POST", "pods"), 0),
        "pod_deletes": delta.get(("DELETE", "pods"), 0),
    }


def print_table(results: list[dict[str, Any]]) -> None:
    """Prints the figures side by side."""
    verbs = sorted({v for r in results for v in r["requests_by_verb"]})
    rows = [
        ("time until all ready (s)", "seconds_until_all_ready"),
        ("operator CPU (s)", "operator_cpu_seconds"),
        ("apiserver CPU (s, child)", "apiserver_cpu_seconds"),
        ("reconciles", "reconciles"),
        ("reconcile errors (409s mostly)", "reconcile_errors"),
        ("pod creates", "pod_creates"),
        ("pod deletes", "pod_deletes"),
    ]
    header = "".join(f"{'concurrency ' + str(r['reconcile_concurrency']):>16}" for r in results)
    print(f"{'':34}{header}")
    for label, key in rows:
        print(f"{label:34}" + "".join(f"{r[key]:>16}" for r in results))
    for verb in verbs:
        print(
            f"{'requests ' + verb:34}"
            + "".join(f"{r['requests_by_verb'].get(verb, 0):>16}" for r in results)
        )


def main() -> None:
    """Parses arguments, runs each scenario, prints (and optionally saves) the figures."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--workers", type=int, default=10)
    parser.add_argument("--reconcile-concurrency", default="1,4")
    parser.add_argument("--pod-start", type=float, default=1.0)
    parser.add_argument(
        "--qps", type=float, default=100.0, help="operator client qps (KubeRay: 100)"
    )
    parser.add_argument(
        "--burst", type=int, default=200, help="operator client burst (KubeRay: 200)"
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.CRITICAL)  # expected 409s are logged as reconcile errors
    results = []
    for value in args.reconcile_concurrency.split(","):
        result = asyncio.run(
            run_once(
                clusters=args.clusters,
                workers=args.workers,
                concurrency=int(value),
                qps=args.qps,
                burst=args.burst,
                pod_start=args.pod_start,
            )
        )
        results.append(result)
        print(json.dumps(result), file=sys.stderr)
    print_table(results)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
