"""Nothing secret leaks: RayClusters with the Ray auth token (``authOptions.mode: token``), a
Redis password (``gcsFaultToleranceOptions.redisPassword``, as a value and from a Secret) and
mTLS (``tlsOptions``, cert-manager's PKI played by the plane's simulated issuer), and a RayJob
with the auth token, run on the embedded plane with the operator logging at debug, its most
verbose level; then every secret value (the token, the passwords, the TLS private keys) is
looked for in the operator's log records (message, arguments, extras, tracebacks), in every
Event, in the ray.io objects' status, in the operator's /metrics exposition and in the plane's,
and found nowhere. Then ``rayop bench`` runs on the same plane (its operator reconciles the
secret-bearing objects too) and its report (JSON, HTML, what it printed) is searched the same way.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import io
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from rayop.cli.commands import loaded_app
from rayop.controllers.config.options import OperatorOptions
from rayop.kube.resources import EVENTS, RAY_CLUSTERS, RAY_JOBS, SECRETS
from rayop.runtime.process.logsetup import configure_logging
from rayop.testing import eventually, open_control_plane, open_operator
from tests.fuzz.objects import base

from .mtls_env import CrdsUnavailable, cert_manager_crds, install_cert_manager_crds
from .raycluster_env import SAMPLE_GATES

app = loaded_app()

NS = "secrets"
REDIS_PASSWORD = "rp-5f0c1e9a7d3b42c8"
REDIS_SECRET_PASSWORD = "rs-8e2d4b6f1a3c5e7d"
OPTIONS = OperatorOptions(feature_gates=SAMPLE_GATES, cert_manager_available=True)

Obj = dict[str, Any]


def _cluster(name: str, **spec: Any) -> Obj:
    obj = base("RayCluster")
    obj["metadata"] = {"name": name}
    obj["spec"].update(spec)
    return obj


def _clusters() -> list[Obj]:
    redis = "redis.secrets.svc.cluster.local:6379"
    from_secret = {"secretKeyRef": {"name": "redis-password", "key": "password"}}
    return [
        _cluster("auth", authOptions={"mode": "token"}),
        _cluster(
            "redis-value",
            gcsFaultToleranceOptions={
                "redisAddress": redis,
                "redisPassword": {"value": REDIS_PASSWORD},
            },
        ),
        _cluster(
            "redis-ref",
            gcsFaultToleranceOptions={
                "redisAddress": redis,
                "redisPassword": {"valueFrom": from_secret},
            },
        ),
        _cluster("mtls", tlsOptions={"enabled": True}),
    ]


def _rayjob() -> Obj:
    job = base("RayJob")
    job["metadata"] = {"name": "auth-job"}
    job["spec"]["rayClusterSpec"]["authOptions"] = {"mode": "token"}
    return job


@pytest.fixture
def captured_logs() -> Iterator[io.StringIO]:
    """Every log record at debug, as the operator's JSON lines, plus each record's raw fields."""
    root = logging.getLogger()
    level = root.level
    stream = io.StringIO()
    handler = configure_logging("debug", "json", stream=stream, stacktrace_level=logging.DEBUG)
    raw = _RawFields(stream)
    root.addHandler(raw)
    try:
        yield stream
    finally:
        root.removeHandler(raw)
        root.removeHandler(handler)
        root.setLevel(level)


class _RawFields(logging.Handler):
    """Writes every field of every record (arguments and extras unformatted) to ``stream``."""

    def __init__(self, stream: io.StringIO) -> None:
        super().__init__(level=1)
        self.stream = stream

    def emit(self, record: logging.LogRecord) -> None:
        self.stream.write(repr(record.__dict__) + "\n")


def _secret_values(secrets: list[Obj]) -> dict[str, str]:
    """Secret values by where they come from: every Secret key but certificates (public)."""
    found: dict[str, str] = {}
    for secret in secrets:
        if secret.get("type") == "kubernetes.io/service-account-token":
            continue
        for key, value in (secret.get("data") or {}).items():
            if key.endswith(".crt"):
                continue
            text = base64.b64decode(value).decode("utf-8", errors="replace")
            name = f"{secret['metadata']['name']}/{key}"
            found[name] = text
            found[name + " (base64)"] = value
            if "PRIVATE KEY" in text:  # any line of the key's body is a leak too
                for i, line in enumerate(text.splitlines()):
                    if len(line) >= 40 and "PRIVATE KEY" not in line:
                        found[f"{name} line {i}"] = line
    return found


async def _bench_report(kubeconfig: str, tmp_path: Path) -> str:
    """Runs a one-cluster ``rayop bench`` on the plane; returns its JSON, HTML and output."""
    out, html = tmp_path / "bench.json", tmp_path / "bench.html"
    args = [
        "bench", "--kubeconfig", kubeconfig, "--clusters", "1", "--workers", "1",
        "--concurrency", "1", "--timeout", "60", "--json", str(out), "--report", str(html),
    ]
    result = await asyncio.to_thread(CliRunner().invoke, app, args)
    assert result.exit_code == 0, result.output
    return out.read_text() + html.read_text() + result.output


async def test_no_secret_value_appears_in_logs_events_status_metrics_or_bench_report(
    captured_logs: io.StringIO, tmp_path: Path
) -> None:
    try:
        crds = cert_manager_crds()
    except CrdsUnavailable as exc:  # the real tier fetches them first (scripts/test-real)
        pytest.skip(f"cert-manager CRDs not available: {exc}")
    async with open_control_plane() as plane:
        await install_cert_manager_crds(plane.client, crds)
        await plane.namespace(NS)
        password = base64.b64encode(REDIS_SECRET_PASSWORD.encode()).decode()
        await plane.client.create(
            SECRETS,
            {"metadata": {"name": "redis-password"}, "data": {"password": password}},
            namespace=NS,
        )
        async with open_operator(
            plane,
            controllers=("RayCluster", "RayJob", "RayService"),
            options=OPTIONS,
            enable_metrics=True,
        ) as running:
            for cluster in _clusters():
                await plane.create(RAY_CLUSTERS, copy.deepcopy(cluster), NS)
            await plane.create(RAY_JOBS, _rayjob(), NS)
            for cluster in _clusters():
                name = cluster["metadata"]["name"]
                await eventually(
                    lambda n=name: plane.raycluster_converged(NS, n),
                    timeout=90,
                    what=f"{name} ready",
                )

            def job_cluster_made() -> bool:
                job = plane.stored(RAY_JOBS, NS, "auth-job") or {}
                return bool((job.get("status") or {}).get("rayClusterName"))

            await eventually(job_cluster_made, timeout=60, what="the RayJob's cluster")
            operator_metrics = running.manager.metrics.render().decode()
        bench_report = await _bench_report(plane.cp.kubeconfig_path, tmp_path)
        secrets = plane.objects(SECRETS, NS)
        values = _secret_values(secrets)
        assert any("auth" in k for k in values), sorted(values)  # the token Secret was made
        assert any("PRIVATE KEY" in v for v in values.values()), sorted(values)
        values["redis password (spec)"] = REDIS_PASSWORD
        values["redis password (Secret)"] = REDIS_SECRET_PASSWORD
        events = orjson.dumps(plane.objects(EVENTS, NS)).decode()
        statuses = orjson.dumps(
            [o.get("status") for r in (RAY_CLUSTERS, RAY_JOBS) for o in plane.objects(r, NS)]
        ).decode()
        plane_metrics = plane.cp.audit.render_metrics().decode()
    places = {
        "operator logs": captured_logs.getvalue(),
        "events": events,
        "status": statuses,
        "operator /metrics": operator_metrics,
        "plane /metrics": plane_metrics,
        "rayop bench report": bench_report,
    }
    assert "debug" in places["operator logs"].lower()  # the capture did see debug records
    leaks = [
        f"{what} in {where}"
        for what, value in values.items()
        for where, text in places.items()
        if value in text
    ]
    assert leaks == [], leaks
