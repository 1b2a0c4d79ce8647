"""Benchmark: pod creates/s on the embedded API server with protobuf bodies against JSON (not a test).

Starts ``rayop apiserver`` (plain HTTP, pods held Pending so only the API server is measured)
in a child process and creates the same KubeRay-like worker pod over and over, once as a
JSON client (``Content-Type``/``Accept: application/json``) and once as a protobuf client
(``application/vnd.kubernetes.protobuf``, as controller-runtime sends), in alternating rounds
(no ownerReferences: the garbage collector would delete pods whose owner does not exist)
in separate namespaces. Bodies are encoded before the clock starts, so the figure is the
server's: decoding the body, storing the pod, encoding the answer. It also times a LIST of
1,000 pods in each encoding. Run:

    .venv/bin/python benchmarks/protobuf_vs_json.py [--pods 2000] [--rounds 3] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

from rayop.sim.apiserver.protobuf import PROTOBUF, decode_protobuf, encode_protobuf

JSON = "application/json"
_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "labels": {"ray.io/cluster": "bench", "ray.io/node-type": "worker", "ray.io/group": "g"},
        "annotations": {"ray.io/ft-enabled": "false"},
    },
    "spec": {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "ray-worker",
                "image": "rayproject/ray:2.52.0",
                "command": ["/bin/bash", "-c", "--"],
                "args": ["ulimit -n 65536; ray start --address=bench-head-svc:6379 --block"],
                "env": [
                    {"name": "RAY_CLUSTER_NAME", "value": "bench"},
                    {"name": "FQ_RAY_IP", "value": "bench-head-svc.default.svc.cluster.local"},
                    {"name": "RAY_IP", "value": "bench-head-svc"},
                    {
                        "name": "RAY_CLOUD_INSTANCE_ID",
                        "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
                    },
                ],
                "resources": {
                    "limits": {"cpu": "1", "memory": "2Gi"},
                    "requests": {"cpu": "1", "memory": "2Gi"},
                },
                "ports": [{"name": "metrics", "containerPort": 8080, "protocol": "TCP"}],
                "livenessProbe": {
                    "exec": {"command": ["bash", "-c", "wget -T 2 -q -O- localhost:52365"]},
                    "initialDelaySeconds": 30,
                    "periodSeconds": 5,
                    "timeoutSeconds": 2,
                    "failureThreshold": 120,
                },
                "volumeMounts": [{"name": "shared-mem", "mountPath": "/dev/shm"}],
            }
        ],
        "volumes": [{"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}],
    },
}


def _start_server(workdir: Path) -> tuple[subprocess.Popen[str], str, str]:
    kubeconfig = workdir / "kubeconfig.yaml"
    cmd = [sys.executable, "-m", "rayop", "apiserver", "--no-tls"]
    cmd += ["--kubeconfig-out", str(kubeconfig), "--pod-pending-delay", "86400"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    proc.stdout.readline()
    doc = yaml.safe_load(kubeconfig.read_text())
    return proc, doc["clusters"][0]["cluster"]["server"], doc["users"][0]["user"]["token"]


def _bodies(prefix: str, n: int, media: str) -> list[bytes]:
    out = []
    for i in range(n):
        pod = copy.deepcopy(_POD)
        pod["metadata"]["name"] = f"{prefix}-{i}"
        out.append(encode_protobuf(pod) if media == PROTOBUF else orjson.dumps(pod))
    return out


async def _pool(bodies: list[bytes], concurrency: int, send: Any) -> float:
    it = iter(bodies)

    async def worker() -> None:
        for body in it:
            await send(body)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - start


async def _creates(
    http: aiohttp.ClientSession, url: str, ns: str, bodies: list[bytes], media: str, conc: int
) -> float:
    headers = {"Content-Type": media, "Accept": media}

    async def send(body: bytes) -> None:
        async with http.post(f"{url}/api/v1/namespaces/{ns}/pods", data=body, headers=headers) as r:
            await r.read()
            assert r.status == 201, r.status

    return len(bodies) / await _pool(bodies, conc, send)


async def _list_ms(http: aiohttp.ClientSession, url: str, ns: str, media: str) -> float:
    times = []
    for _ in range(5):
        start = time.perf_counter()
        async with http.get(f"{url}/api/v1/namespaces/{ns}/pods", headers={"Accept": media}) as r:
            raw = await r.read()
        times.append(time.perf_counter() - start)
        items = decode_protobuf(raw)["items"] if media == PROTOBUF else orjson.loads(raw)["items"]
        assert len(items) == 1000, (media, ns, len(items))
    return statistics.median(times) * 1000


async def main(pods: int, rounds: int, concurrency: int) -> dict[str, Any]:
    """Runs the rounds; returns the medians."""
    with tempfile.TemporaryDirectory() as tmp:
        proc, url, token = _start_server(Path(tmp))
        try:
            auth = {"Authorization": f"Bearer {token}", "Content-Type": JSON}
            async with aiohttp.ClientSession(headers=auth) as http:
                rates: dict[str, list[float]] = {JSON: [], PROTOBUF: []}
                for media, ns in ((JSON, "list-json"), (PROTOBUF, "list-pb")):
                    body = orjson.dumps({"metadata": {"name": ns}})
                    async with http.post(f"{url}/api/v1/namespaces", data=body) as r:
                        assert r.status == 201
                    await _creates(http, url, ns, _bodies("l", 1000, media), media, concurrency)
                lists = {
                    m: await _list_ms(http, url, ns, m)
                    for m, ns in ((JSON, "list-json"), (PROTOBUF, "list-pb"))
                }
                for rnd in range(rounds):
                    for media in (JSON, PROTOBUF) if rnd % 2 == 0 else (PROTOBUF, JSON):
                        ns = f"r{rnd}-{'pb' if media == PROTOBUF else 'json'}"
                        body = orjson.dumps({"metadata": {"name": ns}})
                        async with http.post(f"{url}/api/v1/namespaces", data=body) as r:
                            assert r.status == 201
                        batch = _bodies("p", pods, media)
                        rates[media].append(
                            await _creates(http, url, ns, batch, media, concurrency)
                        )
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=15)
            if proc.stdout is not None:
                proc.stdout.close()
    return {
        "json_creates_per_s": statistics.median(rates[JSON]),
        "protobuf_creates_per_s": statistics.median(rates[PROTOBUF]),
        "json_rounds": [round(r) for r in rates[JSON]],
        "protobuf_rounds": [round(r) for r in rates[PROTOBUF]],
        "json_list_1000_ms": lists[JSON],
        "protobuf_list_1000_ms": lists[PROTOBUF],
        "json_body_bytes": len(orjson.dumps(_POD)),
        "protobuf_body_bytes": len(encode_protobuf(_POD)),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=2000, help="pods per round and encoding")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    result = asyncio.run(main(args.pods, args.rounds, args.concurrency))
    for key, value in result.items():
        print(f"{key}: {value if not isinstance(value, float) else round(value, 1)}")
