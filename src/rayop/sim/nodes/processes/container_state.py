"""The container statuses and pod phase a kubelet reports for processes it really runs.

:class:`ContainerState` is what the runtime knows of one container (waiting with a reason,
running since, terminated with an exit code, restarts, ready); :func:`render` writes them into
the pod's ``status`` (``containerStatuses``, ``initContainerStatuses``, the phase and the
Initialized/ContainersReady/Ready conditions), shaped as a kubelet writes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rayop.apimachinery.objects import Obj
from rayop.sim.nodes import pod_status as ps

__all__ = ["ContainerState", "pod_phase", "render"]


@dataclass
class ContainerState:
    """One container's state as the runtime last saw it."""

    name: str
    image: str
    waiting: str | None = "ContainerCreating"
    waiting_message: str | None = None
    started_at: str | None = None
    exit_code: int | None = None
    reason: str | None = None
    finished_at: str | None = None
    message: str | None = None
    restarts: int = 0
    ready: bool = False
    last: Obj = field(default_factory=dict)
    container_id: str = ""

    def to_status(self) -> Obj:
        """Returns the ``containerStatuses`` entry."""
        if self.waiting is not None:
            state: Obj = {"waiting": {"reason": self.waiting}}
            if self.waiting_message:
                state["waiting"]["message"] = self.waiting_message
        elif self.exit_code is not None:
            state = {"terminated": self._terminated()}
        else:
            state = {"running": {"startedAt": self.started_at}}
        image = self.image if "/" in self.image.split(":")[0] else f"docker.io/library/{self.image}"
        return {
            "name": self.name,
            "image": image,
            "imageID": f"{image}@sha256:{'0' * 64}" if self.started_at else "",
            "containerID": self.container_id,
            "ready": self.ready,
            "started": "running" in state,
            "restartCount": self.restarts,
            "state": state,
            "lastState": self.last,
        }

    def _terminated(self) -> Obj:
        term: Obj = {
            "exitCode": self.exit_code,
            "reason": self.reason or ("Completed" if self.exit_code == 0 else "Error"),
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
            "containerID": self.container_id,
        }
        if self.message:
            term["message"] = self.message
        return term

    def ended(
        self, code: int, now: str, *, reason: str | None = None, message: str | None = None
    ) -> None:
        """Records the exit of the current instance."""
        self.waiting, self.exit_code, self.finished_at = None, code, now
        self.reason, self.message, self.ready = reason, message, False

    def restarting(self, reason: str, message: str) -> None:
        """Moves the ended instance to ``lastState`` and waits (CrashLoopBackOff...)."""
        self.last = {"terminated": self._terminated()}
        self.restarts += 1
        self.waiting, self.waiting_message = reason, message
        self.exit_code = self.reason = self.message = self.finished_at = None
        self.started_at = None

    def running(self, now: str, container_id: str) -> None:
        """Records a start of the container."""
        self.waiting = self.waiting_message = None
        self.exit_code = self.reason = self.message = self.finished_at = None
        self.started_at, self.container_id = now, container_id


def pod_phase(init: list[ContainerState], main: list[ContainerState], policy: str) -> str:
    """Returns the pod phase for these states and the pod's restartPolicy."""
    if any(c.exit_code not in (None, 0) and c.waiting is None for c in init) and policy == "Never":
        return "Failed"
    if any(c.exit_code is None or c.waiting is not None for c in init):
        return "Pending"
    if any(
        c.waiting == "ContainerCreating" or c.waiting == "CreateContainerConfigError" for c in main
    ) and not any(c.started_at for c in main):
        return "Pending"
    terminated = [c for c in main if c.waiting is None and c.exit_code is not None]
    if len(terminated) == len(main) and main:
        if policy == "Always":
            return "Running"
        if all(c.exit_code == 0 for c in main):
            return "Succeeded"
        if policy == "Never":
            return "Failed"
    return "Running"


def render(pod: Obj, init: list[ContainerState], main: list[ContainerState], now: str) -> None:
    """Writes the states into ``pod['status']`` (phase, container statuses, conditions)."""
    policy = str((pod.get("spec") or {}).get("restartPolicy") or "Always")
    st = pod.setdefault("status", {})
    phase = pod_phase(init, main, policy)
    st["phase"] = phase
    if init:
        st["initContainerStatuses"] = [c.to_status() for c in init]
    st["containerStatuses"] = [c.to_status() for c in main]
    initialized = all(c.exit_code == 0 and c.waiting is None for c in init)
    ps.set_condition(
        pod,
        "Initialized",
        initialized,
        now,
        reason=None if initialized else "ContainersNotInitialized",
        message=None
        if initialized
        else "containers with incomplete status: [" + " ".join(c.name for c in init) + "]",
    )
    ready = bool(main) and all(c.ready for c in main) and phase == "Running"
    if ready:
        ps.set_condition(pod, "ContainersReady", True, now)
        ps.set_condition(pod, "Ready", True, now)
        return
    if phase in ("Succeeded", "Failed"):
        reason, message = ("PodCompleted" if phase == "Succeeded" else "PodFailed"), None
        ps.set_condition(pod, "PodReadyToStartContainers", False, now)
    else:
        reason = "ContainersNotReady"
        unready = " ".join(c.name for c in main if not c.ready)
        message = f"containers with unready status: [{unready}]"
    ps.set_condition(pod, "ContainersReady", False, now, reason=reason, message=message)
    ps.set_condition(pod, "Ready", False, now, reason=reason, message=message)
