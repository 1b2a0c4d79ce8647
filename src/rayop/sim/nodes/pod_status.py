"""Pure functions that build the pod status a kubelet reports at each stage of a pod's life.

Every function takes the pod (a dict, changed in place) and the wall-clock time as an RFC 3339
string; none of them performs I/O.
"""

from __future__ import annotations

from rayop.apimachinery.objects import Obj

CONDITION_TYPES = (
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
)
_RANK = {ctype: index for index, ctype in enumerate(CONDITION_TYPES)}


def _containers(pod: Obj, key: str = "containers") -> list[Obj]:
    spec = pod.get("spec") or {}
    items = spec.get(key) or []
    return [c for c in items if isinstance(c, dict)]


def _image(container: Obj) -> str:
    image = str(container.get("image") or "")
    if image and "/" not in image.split(":")[0]:
        return f"docker.io/library/{image}"
    return image


def set_condition(
    pod: Obj,
    ctype: str,
    status: bool,
    now: str,
    *,
    reason: str | None = None,
    message: str | None = None,
) -> None:
    """Sets a pod condition, keeping lastTransitionTime when the status does not change."""
    st = pod.setdefault("status", {})
    conditions: list[Obj] = st.setdefault("conditions", [])
    value = "True" if status else "False"
    for cond in conditions:
        if cond.get("type") == ctype:
            if cond.get("status") != value:
                cond["lastTransitionTime"] = now
            cond["status"] = value
            cond["lastProbeTime"] = None
            _set_reason(cond, reason, message)
            break
    else:
        cond = {"type": ctype, "status": value, "lastProbeTime": None, "lastTransitionTime": now}
        _set_reason(cond, reason, message)
        conditions.append(cond)
        conditions.sort(key=lambda c: _RANK.get(str(c.get("type")), 99))


def _set_reason(cond: Obj, reason: str | None, message: str | None) -> None:
    for key, value in (("reason", reason), ("message", message)):
        if value is None:
            cond.pop(key, None)
        else:
            cond[key] = value


def condition_true(pod: Obj, ctype: str) -> bool:
    """Tells whether the pod has the condition ``ctype`` with status True."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return bool(cond.get("status") == "True")
    return False


def mark_unschedulable(pod: Obj, now: str, *, nodes: int, message: str | None = None) -> None:
    """Leaves the pod Pending with PodScheduled False, reason Unschedulable.

    ``message`` is the scheduler's FitError text (a node-affinity refusal on every node when
    None, what the ``unschedulable_rate`` fault reports).
    """
    st = pod.setdefault("status", {})
    st["phase"] = "Pending"
    set_condition(
        pod,
        "PodScheduled",
        False,
        now,
        reason="Unschedulable",
        message=message
        or f"0/{nodes} nodes are available: {nodes} node(s) didn't match Pod's node "
        f"affinity/selector. preemption: 0/{nodes} nodes are available: {nodes} Preemption is "
        "not helpful for scheduling.",
    )


def mark_scheduled(pod: Obj, now: str, *, host_ip: str, pod_ip: str) -> None:
    """Writes the Pending status a kubelet reports while it creates the pod's containers."""
    st = pod.setdefault("status", {})
    st.update(
        phase="Pending",
        hostIP=host_ip,
        hostIPs=[{"ip": host_ip}],
        podIP=pod_ip,
        podIPs=[{"ip": pod_ip}],
        startTime=st.get("startTime") or now,
        qosClass=_qos(pod),
    )
    has_init = bool(_containers(pod, "initContainers"))
    set_condition(pod, "PodReadyToStartContainers", True, now)
    set_condition(
        pod,
        "Initialized",
        not has_init,
        now,
        reason="ContainersNotInitialized" if has_init else None,
        message="containers with incomplete status: ["
        + " ".join(c.get("name", "") for c in _containers(pod, "initContainers"))
        + "]"
        if has_init
        else None,
    )
    _not_ready(pod, now, "ContainersNotReady")
    set_condition(pod, "PodScheduled", True, now)
    if has_init:
        st["initContainerStatuses"] = [
            _status(c, {"waiting": {"reason": "PodInitializing"}})
            for c in _containers(pod, "initContainers")
        ]
    waiting = "PodInitializing" if has_init else "ContainerCreating"
    st["containerStatuses"] = [
        _status(c, {"waiting": {"reason": waiting}}) for c in _containers(pod)
    ]


def mark_running(pod: Obj, now: str, *, ready: bool) -> None:
    """Writes the Running status: init containers completed, containers started."""
    st = pod.setdefault("status", {})
    st["phase"] = "Running"
    set_condition(pod, "Initialized", True, now)
    if _containers(pod, "initContainers"):
        st["initContainerStatuses"] = [
            _status(c, {"terminated": _terminated(0, "Completed", now, now)}, ready=False)
            for c in _containers(pod, "initContainers")
        ]
    restarts = {c.get("name"): c.get("restartCount", 0) for c in st.get("containerStatuses") or []}
    st["containerStatuses"] = [
        _status(
            c,
            {"running": {"startedAt": now}},
            ready=ready,
            started=True,
            restarts=int(restarts.get(c.get("name"), 0) or 0),
        )
        for c in _containers(pod)
    ]
    if ready:
        set_condition(pod, "ContainersReady", True, now)
        set_condition(pod, "Ready", True, now)
    else:
        _not_ready(pod, now, "ContainersNotReady")


def mark_ready(pod: Obj, now: str) -> None:
    """Turns a Running pod's containers and the pod Ready."""
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        if "running" in (cs.get("state") or {}):
            cs["ready"] = True
    set_condition(pod, "ContainersReady", True, now)
    set_condition(pod, "Ready", True, now)


def mark_crashloop(pod: Obj, now: str, *, restart_count: int) -> None:
    """Shows the first container crash-looping (waiting CrashLoopBackOff, last state terminated)."""
    st = pod.setdefault("status", {})
    st["phase"] = "Running"
    statuses = st.get("containerStatuses") or []
    if statuses:
        first = statuses[0]
        first["state"] = {
            "waiting": {
                "reason": "CrashLoopBackOff",
                "message": f"back-off restarting failed container {first.get('name')} in pod "
                f"{pod['metadata'].get('name')}_{pod['metadata'].get('namespace')}",
            }
        }
        first["lastState"] = {"terminated": _terminated(1, "Error", now, now)}
        first["ready"] = False
        first["started"] = False
        first["restartCount"] = restart_count
    _not_ready(pod, now, "ContainersNotReady")


def mark_terminated(
    pod: Obj, now: str, *, succeeded: bool, exit_code: int | None = None, message: str | None = None
) -> None:
    """Ends the pod: phase Succeeded or Failed, every container terminated."""
    st = pod.setdefault("status", {})
    code = (0 if succeeded else 1) if exit_code is None else exit_code
    reason = "Completed" if succeeded else "Error"
    st["phase"] = "Succeeded" if succeeded else "Failed"
    if message:
        st["message"] = message
    for cs in st.get("containerStatuses") or []:
        started = ((cs.get("state") or {}).get("running") or {}).get("startedAt", now)
        term = _terminated(code, reason, started, now)
        if message:
            term["message"] = message
        cs.update(state={"terminated": term}, ready=False, started=False)
    set_condition(pod, "PodReadyToStartContainers", False, now)
    _not_ready(pod, now, "PodCompleted" if succeeded else "PodFailed")


def _not_ready(pod: Obj, now: str, reason: str) -> None:
    names = " ".join(c.get("name", "") for c in _containers(pod))
    message = None if reason.startswith("Pod") else f"containers with unready status: [{names}]"
    set_condition(pod, "ContainersReady", False, now, reason=reason, message=message)
    set_condition(pod, "Ready", False, now, reason=reason, message=message)


def _status(
    container: Obj, state: Obj, *, ready: bool = False, started: bool = False, restarts: int = 0
) -> Obj:
    name = container.get("name", "")
    status: Obj = {
        "name": name,
        "image": _image(container),
        "imageID": "",
        "containerID": "",
        "ready": ready,
        "started": started,
        "restartCount": restarts,
        "state": state,
        "lastState": {},
    }
    if "running" in state or "terminated" in state:
        status["imageID"] = f"{_image(container)}@sha256:{'0' * 64}"
        status["containerID"] = f"containerd://{abs(hash((name, str(state)))):064x}"[:77]
    return status


def _terminated(code: int, reason: str, started: str, finished: str) -> Obj:
    return {
        "exitCode": code,
        "reason": reason,
        "startedAt": started,
        "finishedAt": finished,
        "containerID": "",
    }


def _qos(pod: Obj) -> str:
    containers = _containers(pod)
    reqs = [(c.get("resources") or {}) for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in reqs):
        return "BestEffort"
    guaranteed = all(
        (r.get("limits") or {}).get("cpu")
        and (r.get("limits") or {}).get("memory")
        and all(
            (r.get("requests") or {}).get(k, (r.get("limits") or {}).get(k))
            == (r.get("limits") or {}).get(k)
            for k in ("cpu", "memory")
        )
        for r in reqs
    )
    return "Guaranteed" if guaranteed else "Burstable"


def readiness_initial_delay(pod: Obj) -> float:
    """Returns the largest readinessProbe.initialDelaySeconds among the pod's containers."""
    delays = [
        float(((c.get("readinessProbe") or {}).get("initialDelaySeconds")) or 0)
        for c in _containers(pod)
    ]
    return max(delays, default=0.0)
