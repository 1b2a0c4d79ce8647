"""What the simulated kubelet writes into a container's log: its command, Ray's start, its exit.

The simulated kubelet runs no process. So that ``kubectl logs`` shows something true about the
pod, each container's log starts with the command line the kubelet would run (command + args,
or the image's entrypoint), followed, for a container that runs ``ray start``, by the lines Ray
prints once its node is up; a container that ends gets a last line with its exit code and
reason. :func:`record_start` and :func:`record_exit` write these lines into the kubelet's
:class:`~rayop.sim.nodes.container_logs.PodLogs`; the rest are pure functions.
"""

from __future__ import annotations

import shlex

from rayop.apimachinery.objects import Obj
from rayop.sim.nodes.container_logs import PodLogs

__all__ = ["exit_lines", "record_crash", "record_exit", "record_start", "start_lines"]

PREFIX = "[rayop simulated kubelet]"
"""Marks the lines the simulated kubelet writes itself (not output of the simulated process)."""


def command_line(container: Obj) -> str:
    """Returns the command the container would run, shell-quoted (empty for the entrypoint)."""
    parts = [str(p) for p in (container.get("command") or []) + (container.get("args") or [])]
    return shlex.join(parts)


def _ray_start(container: Obj) -> str | None:
    for part in (container.get("command") or []) + (container.get("args") or []):
        text = str(part)
        if "ray start" in text:
            start = text.index("ray start")
            end = min(
                (i for i in (text.find(";", start), text.find("&&", start)) if i >= 0),
                default=len(text),
            )
            return text[start:end].strip()
    return None


def start_lines(container: Obj, *, pod_ip: str) -> list[str]:
    """Returns the lines a starting container's log begins with."""
    name = str(container.get("name") or "")
    image = str(container.get("image") or "")
    cmd = command_line(container)
    lines = [
        f'{PREFIX} container "{name}" started from image "{image}"',
        f"{PREFIX} running: {cmd}" if cmd else f"{PREFIX} running the image's entrypoint",
    ]
    ray = _ray_start(container)
    if ray is not None:
        lines.extend(_ray_start_output(ray, pod_ip=pod_ip))
    return lines


def _ray_start_output(command: str, *, pod_ip: str) -> list[str]:
    head = "--head" in command.split()
    lines = [f"Local node IP: {pod_ip}", "", "--------------------", "Ray runtime started."]
    lines.append("--------------------")
    if head:
        lines.extend(
            [
                "",
                "Next steps",
                "  To add another node to this Ray cluster, run",
                f"    ray start --address='{pod_ip}:6379'",
            ]
        )
    if "--block" in command.split():
        lines.extend(
            ["--block", "This command will now block forever until terminated by a signal."]
        )
    return lines


def exit_lines(
    container: str, *, exit_code: int, reason: str, message: str | None = None
) -> list[str]:
    """Returns the lines that end a container's log when it terminates."""
    lines = [message] if message else []
    lines.append(f'{PREFIX} container "{container}" exited with code {exit_code} ({reason})')
    return lines


def _specs(pod: Obj, key: str) -> list[Obj]:
    return [c for c in (pod.get("spec") or {}).get(key) or [] if isinstance(c, dict)]


def _uid(pod: Obj) -> str:
    return str((pod.get("metadata") or {}).get("uid") or "")


def record_start(logs: PodLogs, pod: Obj) -> None:
    """Opens the log of every container of a pod that just started running.

    Init containers (which ran to completion before) get their whole log, closed; each main
    container gets a new instance (per restart count) with its start lines.
    """
    uid = _uid(pod)
    status = pod.get("status") or {}
    pod_ip = str(status.get("podIP") or "")
    for container in _specs(pod, "initContainers"):
        name = str(container.get("name") or "")
        log = logs.open(uid, name)
        for line in start_lines(container, pod_ip=pod_ip):
            log.write(line)
        for line in exit_lines(name, exit_code=0, reason="Completed"):
            log.write(line)
        log.close()
    restarts = {
        cs.get("name"): int(cs.get("restartCount") or 0)
        for cs in status.get("containerStatuses") or []
        if isinstance(cs, dict)
    }
    for container in _specs(pod, "containers"):
        name = str(container.get("name") or "")
        log = logs.open(uid, name, restarts.get(name, 0))
        for line in start_lines(container, pod_ip=pod_ip):
            log.write(line)


def record_exit(logs: PodLogs, pod: Obj) -> None:
    """Ends the open log of every container the pod's status shows terminated."""
    uid = _uid(pod)
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        if not isinstance(cs, dict):
            continue
        state = cs.get("state") or {}
        ended = state.get("terminated") or (cs.get("lastState") or {}).get("terminated")
        log = logs.current(uid, str(cs.get("name") or ""))
        if not ended or log is None or log.closed:
            continue
        for line in exit_lines(
            str(cs.get("name") or ""),
            exit_code=int(ended.get("exitCode") or 0),
            reason=str(ended.get("reason") or ""),
            message=ended.get("message"),
        ):
            log.write(line)
        log.close()


def record_crash(logs: PodLogs, pod: Obj) -> None:
    """Logs one crash of a crash-looping pod's first container (a run that exited 1).

    The first crash ends the instance that started with the pod; each later one is a restart
    that gets an instance of its own, started and ended at once.
    """
    specs = _specs(pod, "containers")
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    if not specs or not statuses:
        return
    uid, name = _uid(pod), str(specs[0].get("name") or "")
    restart = max(0, int(statuses[0].get("restartCount") or 0) - 1)
    log = logs.current(uid, name)
    if log is None or log.closed or log.restart != restart:
        log = logs.open(uid, name, restart)
        pod_ip = str((pod.get("status") or {}).get("podIP") or "")
        for line in start_lines(specs[0], pod_ip=pod_ip):
            log.write(line)
    for line in exit_lines(name, exit_code=1, reason="Error"):
        log.write(line)
    log.close()
