"""Simulates KubeRay's K8sJobMode submitter pods (``ray job submit ...``) against the sim dashboards.

When the kubelet starts a Job pod whose container runs ``ray job submit --address <url> ...``
(KubeRay's generated script: ``BuildJobSubmitCommand`` in
``ray-operator/controllers/ray/common/job.go``, v1.7.0), the submitter waits until the head's
``/api/gcs_healthz`` would succeed, skips the submit when ``ray job status`` would find the job (the
duplicate guard), submits otherwise, then follows the job like ``ray job logs --follow``: the pod
Succeeds (exit 0) once the job is terminal, whatever its status. A refused submission or a lost head
ends the pod Failed with exit code 1, as the real CLI does. The light-weight Go submitter
(RAY_DASHBOARD_ADDRESS / RAY_JOB_SUBMISSION_ID env, entrypoint after ``--``) is recognised too.
"""

from __future__ import annotations

import json
import logging
import shlex
import subprocess
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from rayop.apimachinery.objects import Obj
from rayop.sim.dashboard.head import SimDashboard
from rayop.sim.dashboard.jobs import TERMINAL, DashboardHttpError
from rayop.sim.dashboard.registry import DashboardRegistry, container_env
from rayop.sim.nodes.kubelet import Kubelet
from rayop.sim.storage.controller_base import meta

__all__ = ["SubmitterCommand", "SubmitterSimulator", "parse_submitter"]

log = logging.getLogger(__name__)
_FINAL = {
    "SUCCEEDED": "Job '{}' succeeded",
    "FAILED": "Job '{}' failed",
    "STOPPED": "Job '{}' was stopped",
}
_STOP_TOKENS = frozenset({";", "&&", "||", "|", "&", ";;"})


@dataclass(frozen=True)
class SubmitterCommand:
    """What a submitter container would send (parsed from its command line)."""

    container: str
    address: str
    submission_id: str
    entrypoint: str
    body: dict[str, Any]
    no_wait: bool
    guarded: bool
    """The script checks ``ray job status`` first and skips the submit when the job exists."""


def _script(container: Obj) -> str:
    parts = [str(p) for p in (container.get("command") or []) + (container.get("args") or [])]
    return (
        " ".join(parts)
        if not any("ray job submit" in p for p in parts)
        else next(p for p in parts if "ray job submit" in p)
    )


def _tokens(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    out: list[str] = []
    try:
        for token in lexer:
            if token in _STOP_TOKENS:
                break
            out.append(token)
    except ValueError:
        return []
    return out


def _options(args: list[str]) -> tuple[dict[str, str], set[str], list[str]]:
    flags = {"--no-wait", "--verify", "--disable-usage-stats"}
    values: dict[str, str] = {}
    seen: set[str] = set()
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return values, seen, args[i + 1 :]
        if arg.startswith("--") and "=" in arg:
            key, value = arg.split("=", 1)
            values[key] = value
        elif arg in flags:
            seen.add(arg)
        elif arg.startswith("--") and i + 1 < len(args):
            values[arg] = args[i + 1]
            i += 1
        i += 1
    return values, seen, []


def _body(values: dict[str, str], submission_id: str, entrypoint: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "entrypoint": entrypoint,
        "submission_id": submission_id,
        "metadata": {},
    }
    for flag, key in (
        ("--runtime-env-json", "runtime_env"),
        ("--metadata-json", "metadata"),
        ("--entrypoint-resources", "entrypoint_resources"),
    ):
        if flag in values:
            body[key] = json.loads(values[flag])
    for flag, key in (
        ("--entrypoint-num-cpus", "entrypoint_num_cpus"),
        ("--entrypoint-num-gpus", "entrypoint_num_gpus"),
    ):
        if flag in values:
            body[key] = float(values[flag])
    return body


def parse_submitter(pod: Obj, env: dict[str, str] | None = None) -> SubmitterCommand | None:
    """Finds a submitter container in ``pod`` and parses its command, or returns None.

    Args:
        pod: The pod object.
        env: Plain env of the containers (used for ``$VAR`` addresses and the Go submitter).
    """
    env = env or {}
    for container in (pod.get("spec") or {}).get("containers") or []:
        script = _script(container)
        name = str(container.get("name") or "")
        try:
            if "ray job submit" in script:
                args = _tokens(script[script.index("ray job submit") + len("ray job submit") :])
                values, seen, entry = _options(args)
                address = values.get("--address") or env.get("RAY_ADDRESS", "")
                if address.startswith("$"):
                    address = env.get(address.strip("${}"), "")
                sid = values.get("--submission-id") or env.get("RAY_JOB_SUBMISSION_ID", "")
                entrypoint = subprocess.list2cmdline(entry)
                return SubmitterCommand(
                    name,
                    address,
                    sid,
                    entrypoint,
                    _body(values, sid, entrypoint),
                    "--no-wait" in seen,
                    "ray job status" in script,
                )
            if "kuberay/submitter" in str(container.get("image") or "") and env.get(
                "RAY_DASHBOARD_ADDRESS"
            ):
                values, _, entry = _options([str(a) for a in container.get("args") or []])
                sid = env.get("RAY_JOB_SUBMISSION_ID", "")
                entrypoint = subprocess.list2cmdline(entry)
                return SubmitterCommand(
                    name,
                    env["RAY_DASHBOARD_ADDRESS"],
                    sid,
                    entrypoint,
                    _body(values, sid, entrypoint),
                    True,
                    True,
                )
        except (ValueError, json.JSONDecodeError):
            log.warning("sim submitter: cannot parse the command of %s", meta(pod).get("name"))
            return None
    return None


def service_of(address: str, pod_namespace: str) -> tuple[str, str] | None:
    """Maps ``http://<svc>[.<ns>[.svc...]]:<port>`` to (namespace, service); None for IPs."""
    host = urlsplit(address if "://" in address else f"http://{address}").hostname or ""
    if not host or host in ("localhost", "127.0.0.1") or host.replace(".", "").isdigit():
        return None
    labels = host.split(".")
    return (labels[1] if len(labels) > 1 else pod_namespace), labels[0]


def _is_job_pod(pod: Obj) -> bool:
    return any(ref.get("kind") == "Job" for ref in meta(pod).get("ownerReferences") or [])


class SubmitterSimulator:
    """Hooks the kubelet so that submitter Job pods talk to the simulated dashboards.

    Args:
        registry: The dashboards.
        kubelet: The simulated kubelet (its ``on_pod_running`` and ``completion_claims``).
    """

    def __init__(self, registry: DashboardRegistry, kubelet: Kubelet) -> None:
        self.registry = registry
        self.kubelet = kubelet
        kubelet.on_pod_running.append(self._on_running)
        kubelet.completion_claims.append(self._claims)

    def _env(self, pod: Obj) -> dict[str, str]:
        ns = str(meta(pod).get("namespace") or "")
        merged: dict[str, str] = {}
        for container in (pod.get("spec") or {}).get("containers") or []:
            merged.update(
                container_env(
                    self.registry.store, ns, pod, container_name=str(container.get("name") or "")
                )
            )
        return merged

    def _claims(self, pod: Obj) -> bool:
        return _is_job_pod(pod) and parse_submitter(pod, self._env(pod)) is not None

    def _on_running(self, pod: Obj) -> None:
        if not _is_job_pod(pod):
            return
        env = self._env(pod)
        cmd = parse_submitter(pod, env)
        if cmd is not None:
            self.registry.spawn(self._run(pod, cmd, env), name=f"sim-submitter-{meta(pod)['name']}")

    async def _run(self, pod: Obj, cmd: SubmitterCommand, env: dict[str, str]) -> None:
        md = meta(pod)
        ns, name, uid = str(md.get("namespace") or ""), str(md["name"]), str(md.get("uid"))
        target = service_of(cmd.address, ns)
        poll = self.registry.config.submitter_poll_seconds
        dash: SimDashboard | None = None
        while dash is None:
            if not self._alive(ns, name, uid):
                return
            dash = None if target is None else self.registry.for_service(*target)
            if dash is not None and not dash.gcs_healthy():
                dash = None
            if dash is None:
                await self.registry.clock.sleep(poll)
        exit_code: int | None = self._submit(dash, cmd, env, uid)
        if exit_code == 0:
            exit_code = await self._follow(dash, cmd, ns, name, uid)
        if exit_code is not None:
            await self.kubelet.complete_pod(ns, name, succeeded=exit_code == 0, exit_code=exit_code)

    def _print(self, uid: str, cmd: SubmitterCommand, *lines: str) -> None:
        """Writes what the submitter's ``ray job`` commands print to its container's log."""
        sink = self.kubelet.logs.current(uid, cmd.container)
        if sink is not None:
            sink.write("\n".join(lines))

    def _submit(
        self, dash: SimDashboard, cmd: SubmitterCommand, env: dict[str, str], uid: str
    ) -> int:
        if dash.token:
            token = env.get("RAY_AUTH_TOKEN") if env.get("RAY_AUTH_MODE") == "token" else None
            if token != dash.token:
                self._print(uid, cmd, "RuntimeError: Request failed with status code 401.")
                return 1
        if cmd.guarded and dash.job_status(cmd.submission_id) is not None:
            return 0
        try:
            dash.submit_job(dict(cmd.body))
        except DashboardHttpError as err:
            log.info("sim submitter: submit of %s refused: %s", cmd.submission_id, err.status)
            self._print(
                uid,
                cmd,
                f"RuntimeError: Request failed with status code {err.status}: {err.text}.",
            )
            return 1
        rule = "-" * 55
        self._print(
            uid,
            cmd,
            f"Job submission server address: {cmd.address}",
            rule,
            f"Job '{cmd.submission_id}' submitted successfully",
            rule,
        )
        return 0

    async def _follow(
        self, dash: SimDashboard, cmd: SubmitterCommand, ns: str, name: str, uid: str
    ) -> int | None:
        poll = self.registry.config.submitter_poll_seconds
        while True:
            if not self._alive(ns, name, uid):
                return None
            status = None if dash.closed else dash.job_status(cmd.submission_id)
            if status is None:
                return 1
            if status in TERMINAL:
                job = dash.jobs.find(cmd.submission_id)
                logs = "" if job is None else dash.jobs.logs(job).rstrip("\n")
                self._print(
                    uid, cmd, *([logs] if logs else []), _FINAL[status].format(cmd.submission_id)
                )
                return 1 if (not cmd.no_wait and status == "FAILED") else 0
            job = dash.jobs.find(cmd.submission_id)
            wait = poll
            end = None if job is None else job.terminal_at()
            if end is not None:
                wait = max(0.0, min(poll, end[0] - dash.clock.time()))
            await self.registry.clock.sleep(wait)

    def _alive(self, ns: str, name: str, uid: str) -> bool:
        info = self.registry.resource("", "v1", "pods")
        pod = None if info is None else self.registry.store.peek(info, ns, name)
        return (
            pod is not None
            and meta(pod).get("uid") == uid
            and not meta(pod).get("deletionTimestamp")
        )
