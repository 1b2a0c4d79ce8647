"""Benchmark: the embedded plane's cost per verb, JSON clients against protobuf clients (not a test).

Starts ``rayop apiserver`` (plain HTTP, pods held Pending so only the API server works) in a
child process and, in each round, runs the same sequence once as a JSON client
(``Content-Type``/``Accept: application/json``) and once as a protobuf client
(``application/vnd.kubernetes.protobuf``, as client-go sends for built-in kinds), alternating
which goes first, each in a namespace of its own:

- create: N KubeRay-like worker pods;
- get: each pod once;
- update: each pod PUT back with one label changed;
- patch: a merge patch of one label on each pod (the patch body is JSON for both clients, as
  client-go sends it; the answer is in the client's encoding);
- list: the namespace's N pods, 5 times;
- then a JSON client (as a kubelet) writes each pod's status (not timed);
- watch: one watch from before the creates, read until its 4N events (ADDED, then MODIFIED
  three times) have arrived: the cost of encoding watch events. The watch replays history, so
  each version is encoded after newer ones: the worst order for reusing the bytes of the parts
  a version shares with the one before it (a status write shares the spec).

Bodies are encoded before the clock starts, and the client only splits watch frames, so the
figures are the server's: ops/s (wall clock, ``--concurrency`` requests in flight) and the
server process's CPU time per request (utime + stime from /proc, 10 ms ticks), the per-client
server cost. Each figure is the median of the rounds, with the min-max spread.

Then, in this process, the codec work of each verb alone (CPU time per object, best of 3, the
least load-dependent figure): a create's body decoded, type-checked and its stored object
encoded; a GET of a version encoded before; the watch event of a status write (the spec
shared with the version before); an update's or patch's answer (a new version, type-checked
and encoded); a LIST of 1,000 pods encoded before. Run:

    .venv/bin/python benchmarks/plane_codec.py [--pods 1000] [--rounds 3] [--concurrency 16]
        [--pods-per-spec 2] [--profile server.prof]

``--pods-per-spec N``: each N consecutive pods share one spec (default 2, as a KubeRay-like
cluster of a head and three workers has), so the plane's spec memo hits as it would for
KubeRay's creates; 1 makes every spec differ (every lookup misses: the memo's own cost).

``--profile`` runs the server under cProfile and writes its statistics to the file; ``--only``
runs one of the two clients (to profile it alone).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml
from protobuf_vs_json import _POD

from rayop.sim.apiserver.protobuf import PROTOBUF, decode_protobuf, encode_protobuf
from rayop.sim.apiserver.request_body import check_shape
from rayop.sim.apiserver.typed_body import check_types
from rayop.sim.machinery.resources import ResourceRegistry

JSON = "application/json"
_MERGE_PATCH = "application/merge-patch+json"
_TICK = os.sysconf("SC_CLK_TCK")

VERBS = ("create", "get", "update", "patch", "list", "watch")


@dataclass
class _Server:
    proc: subprocess.Popen[str]
    url: str
    token: str

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK


def _start_server(workdir: Path, profile: str | None) -> _Server:
    kubeconfig = workdir / "kubeconfig.yaml"
    cmd = [sys.executable]
    if profile:
        cmd += ["-m", "cProfile", "-o", profile]
    cmd += ["-m", "rayop", "apiserver", "--no-tls"]
    cmd += ["--kubeconfig-out", str(kubeconfig), "--pod-pending-delay", "86400"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    proc.stdout.readline()
    doc = yaml.safe_load(kubeconfig.read_text())
    return _Server(proc, doc["clusters"][0]["cluster"]["server"], doc["users"][0]["user"]["token"])


def _encode(obj: dict[str, Any], media: str) -> bytes:
    return encode_protobuf(obj) if media == PROTOBUF else orjson.dumps(obj)


def _decode(raw: bytes, media: str) -> Any:
    return decode_protobuf(raw) if media == PROTOBUF else orjson.loads(raw)


async def _pool(jobs: list[Any], concurrency: int, send: Callable[[Any], Awaitable[None]]) -> None:
    it = iter(jobs)

    async def worker() -> None:
        for job in it:
            await send(job)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


class _Client:
    """One client's sequence of verbs in one namespace."""

    def __init__(self, http: aiohttp.ClientSession, url: str, media: str, ns: str) -> None:
        self.http, self.media, self.ns = http, media, ns
        self.base = f"{url}/api/v1/namespaces/{ns}/pods"
        self.headers = {"Content-Type": media, "Accept": media}

    async def _send(self, method: str, url: str, body: bytes | None, want: int, **kw: Any) -> bytes:
        headers = {**self.headers, **kw}
        async with self.http.request(method, url, data=body, headers=headers) as r:
            raw = await r.read()
            assert r.status == want, (method, url, r.status, raw[:300])
            return raw

    async def create(self, bodies: list[bytes], conc: int) -> None:
        async def one(body: bytes) -> None:
            await self._send("POST", self.base, body, 201)

        await _pool(bodies, conc, one)

    async def get(self, names: list[str], conc: int) -> list[bytes]:
        out: list[bytes] = []

        async def one(name: str) -> None:
            out.append(await self._send("GET", f"{self.base}/{name}", None, 200))

        await _pool(names, conc, one)
        return out

    async def update(self, bodies: list[tuple[str, bytes]], conc: int) -> None:
        async def one(job: tuple[str, bytes]) -> None:
            await self._send("PUT", f"{self.base}/{job[0]}", job[1], 200)

        await _pool(bodies, conc, one)

    async def patch(self, names: list[str], conc: int) -> None:
        body = orjson.dumps({"metadata": {"labels": {"bench/patched": "yes"}}})

        async def one(name: str) -> None:
            url = f"{self.base}/{name}"
            await self._send("PATCH", url, body, 200, **{"Content-Type": _MERGE_PATCH})

        await _pool(names, conc, one)

    async def status(self, names: list[str], conc: int) -> None:
        async def one(name: str) -> None:
            raw = await self._send("GET", f"{self.base}/{name}", None, 200, Accept=JSON)
            pod = orjson.loads(raw)
            pod["status"] = {**pod.get("status", {}), "phase": "Running", "podIP": "10.0.0.1"}
            url = f"{self.base}/{name}/status"
            headers = {"Content-Type": JSON, "Accept": JSON}
            await self._send("PUT", url, orjson.dumps(pod), 200, **headers)

        await _pool(names, conc, one)

    async def list(self) -> bytes:
        return await self._send("GET", self.base, None, 200)

    async def watch(self, rv: str, want: int) -> None:
        url = f"{self.base}?watch=1&resourceVersion={rv}&timeoutSeconds=120"
        got, buf = 0, b""
        async with self.http.get(url, headers={"Accept": self.media}) as r:
            assert r.status == 200, r.status
            async for chunk in r.content.iter_any():
                buf += chunk
                if self.media == PROTOBUF:
                    while len(buf) >= 4:
                        (size,) = struct.unpack_from(">I", buf)
                        if len(buf) < 4 + size:
                            break
                        buf, got = buf[4 + size :], got + 1
                else:
                    got += buf.count(b"\n")
                    buf = buf[buf.rfind(b"\n") + 1 :]
                if got >= want:
                    return
        raise AssertionError(f"watch ended after {got} of {want} events")


async def _round(
    server: _Server, http: aiohttp.ClientSession, media: str, ns: str, pods: int, conc: int
) -> dict[str, tuple[float, float]]:
    """One client's sequence; returns verb -> (ops/s, server CPU µs per op)."""
    async with http.post(
        f"{server.url}/api/v1/namespaces", data=orjson.dumps({"metadata": {"name": ns}})
    ) as r:
        assert r.status == 201, r.status
        start_rv = orjson.loads(await r.read())["metadata"]["resourceVersion"]
    client = _Client(http, server.url, media, ns)
    names = [f"p-{i}" for i in range(pods)]
    creates = []
    for i in range(pods):
        creates.append(_encode(_pod(i), media))
    out: dict[str, tuple[float, float]] = {}

    async def timed(verb: str, ops: int, work: Awaitable[Any]) -> Any:
        cpu, wall = server.cpu_seconds(), time.perf_counter()
        result = await work
        wall, cpu = time.perf_counter() - wall, server.cpu_seconds() - cpu
        out[verb] = (ops / wall, cpu / ops * 1e6)
        return result

    await timed("create", pods, client.create(creates, conc))
    got = await timed("get", pods, client.get(names, conc))
    updates = []
    for raw in got:
        pod = _decode(raw, media)
        pod["metadata"]["labels"]["bench/updated"] = "yes"
        updates.append((pod["metadata"]["name"], _encode(pod, media)))
    await timed("update", pods, client.update(updates, conc))
    await timed("patch", pods, client.patch(names, conc))

    async def lists() -> bytes:
        for _ in range(4):
            await client.list()
        return await client.list()

    listed = await timed("list", 5, lists())
    assert len(_decode(listed, media)["items"]) == pods  # checked off the clock
    await client.status(names, conc)
    await timed("watch", 4 * pods, client.watch(start_rv, 4 * pods))
    return out


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):,.1f} [{min(values):,.1f}-{max(values):,.1f}]"


async def main(pods: int, rounds: int, conc: int, profile: str | None, only: str) -> None:
    """Runs the rounds and prints a table of medians with their spread."""
    with tempfile.TemporaryDirectory() as tmp:
        server = _start_server(Path(tmp), profile)
        results: dict[str, list[dict[str, tuple[float, float]]]] = {JSON: [], PROTOBUF: []}
        try:
            headers = {"Authorization": f"Bearer {server.token}", "Content-Type": JSON}
            connector = aiohttp.TCPConnector(limit=conc + 2)
            async with aiohttp.ClientSession(headers=headers, connector=connector) as http:
                for rnd in range(rounds):
                    for media in (JSON, PROTOBUF) if rnd % 2 == 0 else (PROTOBUF, JSON):
                        if only != "both" and media != {"json": JSON, "protobuf": PROTOBUF}[only]:
                            continue
                        ns = f"r{rnd}-{'pb' if media == PROTOBUF else 'json'}"
                        results[media].append(await _round(server, http, media, ns, pods, conc))
        finally:
            server.proc.send_signal(signal.SIGTERM)
            server.proc.wait(timeout=60)
            if server.proc.stdout is not None:
                server.proc.stdout.close()
    print(
        f"pods={pods} rounds={rounds} concurrency={conc} pods-per-spec={PODS_PER_SPEC}"
        f" load={os.getloadavg()[0]:.2f}"
    )
    print(
        "verb    | JSON ops/s            | protobuf ops/s        | JSON CPU us/op      | protobuf CPU us/op"
    )
    for verb in VERBS:
        cells = []
        for index in (0, 1):
            for media in (JSON, PROTOBUF):
                values = [r[verb][index] for r in results[media]]
                cells.append(_spread(values) if values else "-")
        print(f"{verb:7s} | " + " | ".join(f"{c:21s}" for c in cells))
    print("(list: whole LISTs of the namespace's pods; watch: events; CPU: the server process's)")
    print("codec CPU in process, us per object (list: per LIST of 1,000) | JSON | protobuf")
    for verb, (as_json, as_pb) in codec_cpu().items():
        print(f"{verb:12s} | {as_json:10,.1f} | {as_pb:10,.1f}")


PODS_PER_SPEC = 2
"""Consecutive pods that share one spec (``--pods-per-spec``): a KubeRay-like cluster of a head
and three workers has two specs for its four pods, the workers' differing from another
cluster's by the cluster's name (which the plane's spec memo keys on)."""


def _pod(i: int) -> dict[str, Any]:
    """Pod ``p-i``, its spec shared with the pods of its group of :data:`PODS_PER_SPEC`."""
    pod = copy.deepcopy(_POD)
    pod["metadata"]["name"] = f"p-{i}"
    env = pod["spec"]["containers"][0]["env"]
    env[0] = {"name": "RAY_CLUSTER_NAME", "value": f"bench-{i // PODS_PER_SPEC}"}
    return pod


def _stored(i: int, rv: int = 7) -> dict[str, Any]:
    pod = _pod(i)
    meta = {"name": f"p-{i}", "namespace": "ns", "uid": f"uid-{i}", "resourceVersion": str(rv)}
    pod["metadata"].update(meta, creationTimestamp="2026-01-01T00:00:00Z")
    pod["spec"].update(schedulerName="default-scheduler", dnsPolicy="ClusterFirst")
    pod["status"] = {"phase": "Pending", "qosClass": "Guaranteed"}
    return pod


def _cpu_per_op(ops: int, work: Callable[[], Any], setup: Callable[[], Any] = list) -> float:
    """The best of 3 of ``work``'s CPU µs per op, less ``setup``'s (building its inputs)."""
    best = []
    for fn in (work, setup):
        times = []
        for _ in range(3):
            start = time.process_time()
            fn()
            times.append(time.process_time() - start)
        best.append(min(times))
    return max(best[0] - best[1], 0.0) / ops * 1e6


def codec_cpu(n: int = 1000) -> dict[str, tuple[float, float]]:
    """verb -> (JSON, protobuf) codec CPU µs per object (per LIST for list), in this process."""
    info = next(i for i in ResourceRegistry().all() if i.kind == "Pod" and not i.group)
    named = [_pod(i) for i in range(n)]
    bodies = {JSON: [orjson.dumps(b) for b in named], PROTOBUF: [encode_protobuf(b) for b in named]}

    def create(media: str) -> Callable[[], None]:
        def run() -> None:
            for i, raw in enumerate(bodies[media]):
                if media == PROTOBUF:  # the body is its own kind's message: no second check
                    decode_protobuf(raw)
                else:
                    body = orjson.loads(raw)
                    check_shape(body)
                    check_types(info, body)
                _encode(_stored(i), media)

        return run

    stored = [_stored(i) for i in range(n)]
    for obj in stored:
        encode_protobuf(obj)

    def status_writes() -> list[dict[str, Any]]:
        status = {"phase": "Running", "podIP": "10.0.0.1"}
        return [{**o, "metadata": {**o["metadata"], "resourceVersion": "8"}, "status": status}
                for o in stored]  # fmt: skip

    def answer(media: str) -> None:
        for obj in [_stored(i, rv=9) for i in range(n)]:
            check_types(info, obj)
            _encode(obj, media)

    listed = {"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": stored}
    building = lambda: [_stored(i) for i in range(n)]  # noqa: E731
    out: dict[str, tuple[float, float]] = {}
    for verb, work, setup, ops in (
        ("create", create, building, n),
        ("get", lambda m: lambda: [_encode(o, m) for o in stored], list, n),
        ("watch", lambda m: lambda: [_encode(o, m) for o in status_writes()], status_writes, n),
        ("update/patch", lambda m: lambda: answer(m), building, n),
        ("list", lambda m: lambda: _encode(listed, m), list, 1),
    ):
        out[verb] = (_cpu_per_op(ops, work(JSON), setup), _cpu_per_op(ops, work(PROTOBUF), setup))
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000, help="pods per round and client")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--profile", help="run the server under cProfile, stats to this file")
    parser.add_argument("--only", choices=("both", "json", "protobuf"), default="both")
    parser.add_argument("--pods-per-spec", type=int, default=PODS_PER_SPEC,
                        help="consecutive pods sharing one spec (1: every spec differs)")  # fmt: skip
    args = parser.parse_args()
    if args.pods_per_spec < 1:
        parser.error(f"--pods-per-spec must be at least 1, got {args.pods_per_spec}")
    PODS_PER_SPEC = args.pods_per_spec
    asyncio.run(main(args.pods, args.rounds, args.concurrency, args.profile, args.only))
