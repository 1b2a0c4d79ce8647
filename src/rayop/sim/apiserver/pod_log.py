"""The ``pods/log`` subresource: a container's output, as kube-apiserver relays the kubelet's.

kube-apiserver checks the options and the container, then streams what the node's kubelet
answers; here the simulated kubelet's :class:`~rayop.sim.nodes.container_logs.PodLogs` is read
directly. Options and errors follow kube-apiserver and the kubelet: ``container`` (required when
the pod has several), ``follow``, ``previous``, ``tailLines``, ``sinceSeconds``/``sinceTime``,
``timestamps``, ``limitBytes``; a pod not yet bound to a node gets an empty 204, a container
that has not started gets 400 "is waiting to start", bad options get 422 as PodLogOptions.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime

from aiohttp import web

from rayop.apimachinery.objects import Obj
from rayop.sim.apiserver.request import ApiRequest, ServerContext
from rayop.sim.machinery import errors as se
from rayop.sim.nodes.container_logs import ContainerLog, LogQuery, PodLogs

__all__ = ["POD_LOGS_KEY", "handle_pod_log"]

POD_LOGS_KEY: web.AppKey[PodLogs] = web.AppKey("rayop_sim_pod_logs", PodLogs)
"""Where the application finds the kubelet's logs (set by whoever runs a kubelet)."""

_NEGATIVE = "must be greater than or equal to 0"
_NOT_POSITIVE = "must be greater than 0"


def _flag(query: Mapping[str, str], key: str) -> bool:
    """Parses a boolean query parameter as apimachinery does (anything but 0/false is true)."""
    if key not in query:
        return False
    value = query[key]
    return not (value == "0" or value.lower() == "false")


def _integer(query: Mapping[str, str], key: str) -> int | None:
    if key not in query:
        return None
    try:
        return int(query[key])
    except ValueError:
        raise se.bad_request(f'strconv.ParseInt: parsing "{query[key]}": invalid syntax') from None


def parse_log_query(name: str, query: Mapping[str, str]) -> tuple[LogQuery, bool, bool]:
    """Turns the request's PodLogOptions into a :class:`LogQuery`, follow and previous.

    Raises:
        StatusError: 400 for a value that does not parse, 422 (PodLogOptions) for one that
            ValidatePodLogOptions refuses.
    """
    tail, limit, since_seconds = (
        _integer(query, "tailLines"),
        _integer(query, "limitBytes"),
        _integer(query, "sinceSeconds"),
    )
    since_time: float | None = None
    if "sinceTime" in query:
        try:
            since_time = datetime.fromisoformat(query["sinceTime"]).timestamp()
        except ValueError:
            raise se.bad_request(
                f'parsing time "{query["sinceTime"]}" as "2006-01-02T15:04:05Z07:00": cannot parse'
            ) from None
    causes: list[tuple[str, str, str]] = []
    if tail is not None and tail < 0:
        causes.append(("tailLines", "FieldValueInvalid", f"Invalid value: {tail}: {_NEGATIVE}"))
    if limit is not None and limit < 1:
        causes.append(
            ("limitBytes", "FieldValueInvalid", f"Invalid value: {limit}: {_NOT_POSITIVE}")
        )
    if since_seconds is not None and since_time is not None:
        causes.append(
            (
                "",
                "FieldValueForbidden",
                "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified",
            )
        )
    elif since_seconds is not None and since_seconds < 1:
        causes.append(
            (
                "sinceSeconds",
                "FieldValueInvalid",
                f"Invalid value: {since_seconds}: {_NOT_POSITIVE}",
            )
        )
    if causes:
        raise se.invalid("PodLogOptions", "", name, causes)
    since = since_time if since_seconds is None else time.time() - since_seconds
    log_query = LogQuery(
        tail_lines=tail, since=since, timestamps=_flag(query, "timestamps"), limit_bytes=limit
    )
    return log_query, _flag(query, "follow"), _flag(query, "previous")


def _container_names(spec: Obj) -> list[str]:
    names: list[str] = []
    for key in ("initContainers", "containers", "ephemeralContainers"):
        names.extend(str(c.get("name") or "") for c in spec.get(key) or [] if isinstance(c, dict))
    return names


def choose_container(pod: Obj, requested: str) -> str:
    """Returns the container a log request reads (kube-apiserver's validateContainer).

    Raises:
        StatusError: 400 when none is named and the pod has several, or the name is unknown.
    """
    spec = pod.get("spec") or {}
    name = str((pod.get("metadata") or {}).get("name") or "")
    if requested:
        if requested not in _container_names(spec):
            raise se.bad_request(f"container {requested} is not valid for pod {name}")
        return requested
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    if len(containers) == 1:
        return str(containers[0].get("name") or "")
    if not containers:
        raise se.bad_request(f"a container name must be specified for pod {name}")
    choices = " ".join(_container_names(spec))
    raise se.bad_request(
        f"a container name must be specified for pod {name}, choose one of: [{choices}]"
    )


def _container_status(pod: Obj, container: str) -> Obj | None:
    status = pod.get("status") or {}
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for cs in status.get(key) or []:
            if isinstance(cs, dict) and cs.get("name") == container:
                return cs
    return None


def select_log(logs: PodLogs, pod: Obj, container: str, *, previous: bool) -> ContainerLog:
    """Picks the container instance to read from its status, as the kubelet does.

    Raises:
        StatusError: 400 with the kubelet's message when there is nothing to read yet.
    """
    md = pod.get("metadata") or {}
    uid, pod_name = str(md.get("uid") or ""), str(md.get("name") or "")
    where = f'container "{container}" in pod "{pod_name}"'
    cs = _container_status(pod, container)
    if cs is None:
        raise se.bad_request(f"{where} is not available")
    state, last = cs.get("state") or {}, cs.get("lastState") or {}
    if previous:
        if not last.get("terminated"):
            raise se.bad_request(f"previous terminated {where} not found")
        found = (
            logs.previous(uid, container) if "running" in state else logs.current(uid, container)
        )
    elif "running" in state or "terminated" in state or last.get("terminated"):
        found = logs.current(uid, container)
    elif "waiting" in state:
        reason = str((state.get("waiting") or {}).get("reason") or "")
        raise se.bad_request(f"{where} is waiting to start: {reason}")
    else:
        raise se.bad_request(f"{where} is waiting to start - no logs yet")
    if found is None:
        if "terminated" in state or last.get("terminated"):
            raise se.bad_request(f"{where} is terminated")
        raise se.bad_request(f"{where} is waiting to start - no logs yet")
    return found


async def handle_pod_log(
    ctx: ServerContext, request: web.Request, req: ApiRequest
) -> web.StreamResponse:
    """Serves GET ``/api/v1/namespaces/<ns>/pods/<name>/log``."""
    if request.method != "GET":
        raise se.method_not_allowed()
    name, namespace = req.name or "", req.namespace or ""
    pod = ctx.store.peek(req.info, namespace, name)
    if pod is None:
        raise se.not_found("pods", "", name)
    query, follow, previous = parse_log_query(name, request.query)
    container = choose_container(pod, request.query.get("container", ""))
    if not (pod.get("spec") or {}).get("nodeName"):
        return web.Response(status=204)
    logs = request.app.get(POD_LOGS_KEY)
    if logs is None:
        raise se.service_unavailable(
            "no kubelet runs on this server, so no pod has logs (the embedded control plane "
            "without its simulated kubelet)"
        )
    found = select_log(logs, pod, container, previous=previous)
    if not follow:
        return web.Response(body=found.read(query), content_type="text/plain")
    resp = web.StreamResponse(status=200)
    resp.content_type = "text/plain"
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    async for chunk in found.follow(query):
        await resp.write(chunk)
    await resp.write_eof()
    return resp
