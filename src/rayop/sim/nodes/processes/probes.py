"""Runs a container's probes for real: ``exec`` in the container, ``httpGet``/``tcpSocket`` at
the pod's address, with the kubelet's timing fields and defaults.

:class:`ProbeSpec` reads ``initialDelaySeconds`` (0), ``periodSeconds`` (10),
``timeoutSeconds`` (1), ``successThreshold`` (1) and ``failureThreshold`` (3); :func:`run_probe`
performs one check and returns whether it passed and, when it did not, why (the text the
kubelet puts into its ``Unhealthy`` event).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from rayop.apimachinery.objects import Obj

__all__ = ["ProbeResult", "ProbeSpec", "run_probe"]


@dataclass(frozen=True)
class ProbeSpec:
    """A probe's timing (Kubernetes' defaults where a field is unset)."""

    initial_delay: float
    period: float
    timeout: float
    success_threshold: int
    failure_threshold: int

    @classmethod
    def of(cls, probe: Obj) -> ProbeSpec:
        """Reads the timing fields of a probe."""
        return cls(
            initial_delay=float(probe.get("initialDelaySeconds") or 0),
            period=float(probe.get("periodSeconds") or 10),
            timeout=float(probe.get("timeoutSeconds") or 1),
            success_threshold=int(probe.get("successThreshold") or 1),
            failure_threshold=int(probe.get("failureThreshold") or 3),
        )


@dataclass(frozen=True)
class ProbeResult:
    """One probe check: passed, or the reason it failed."""

    ok: bool
    message: str = ""


def _port(value: Any, container: Obj) -> int:
    if isinstance(value, int) or str(value).isdigit():
        return int(value)
    for port in container.get("ports") or []:
        if port.get("name") == value:
            return int(port.get("containerPort") or 0)
    raise ValueError(f"port {value!r} is not a named port of container {container.get('name')}")


async def _exec(
    argv: Sequence[str], env: Mapping[str, str], cwd: str, timeout: float
) -> ProbeResult:
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            env=dict(env),
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        return ProbeResult(False, f"Exec probe errored: {exc}")
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except (TimeoutError, asyncio.CancelledError) as exc:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        if isinstance(exc, asyncio.CancelledError):
            raise
        return ProbeResult(False, f"command timed out after {timeout:g}s")
    if proc.returncode == 0:
        return ProbeResult(True)
    return ProbeResult(False, out.decode(errors="replace").strip())


async def _http(probe: Obj, container: Obj, pod_ip: str, timeout: float) -> ProbeResult:
    scheme = str(probe.get("scheme") or "HTTP").lower()
    host = str(probe.get("host") or pod_ip)
    port = _port(probe.get("port"), container)
    path = str(probe.get("path") or "/")
    url = f"{scheme}://{host}:{port}{path if path.startswith('/') else '/' + path}"
    headers = {str(h.get("name")): str(h.get("value")) for h in probe.get("httpHeaders") or []}
    try:
        limit = aiohttp.ClientTimeout(total=timeout)
        async with (
            aiohttp.ClientSession(timeout=limit) as session,
            session.get(url, headers=headers, ssl=False) as response,
        ):
            if 200 <= response.status < 400:
                return ProbeResult(True)
            return ProbeResult(False, f"HTTP probe failed with statuscode: {response.status}")
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        return ProbeResult(False, f'Get "{url}": {exc or type(exc).__name__}')


async def _tcp(probe: Obj, container: Obj, pod_ip: str, timeout: float) -> ProbeResult:
    host = str(probe.get("host") or pod_ip)
    port = _port(probe.get("port"), container)
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except (TimeoutError, OSError) as exc:
        return ProbeResult(False, f"dial tcp {host}:{port}: {exc or 'i/o timeout'}")
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return ProbeResult(True)


async def run_probe(
    probe: Obj,
    container: Obj,
    *,
    pod_ip: str,
    exec_argv: Sequence[str] | None,
    env: Mapping[str, str],
    cwd: str,
) -> ProbeResult:
    """Performs one check of ``probe`` (``exec_argv`` is its command, rewritten for here)."""
    timeout = ProbeSpec.of(probe).timeout
    try:
        if "exec" in probe:
            return await _exec(exec_argv or [], env, cwd, timeout)
        if "httpGet" in probe:
            return await _http(probe["httpGet"], container, pod_ip, timeout)
        if "tcpSocket" in probe:
            return await _tcp(probe["tcpSocket"], container, pod_ip, timeout)
    except ValueError as exc:
        return ProbeResult(False, str(exc))
    return ProbeResult(False, "probe has no exec, httpGet or tcpSocket handler")
