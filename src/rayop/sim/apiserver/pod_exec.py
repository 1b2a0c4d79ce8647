"""``pods/exec``, ``pods/attach`` and ``pods/portforward``: streams into the pod's processes.

kube-apiserver looks the pod up (404 when it does not exist, 400 for an unknown container or
one not named when the pod has several, 400 when it has no node yet) and hands the upgraded
connection to the node's kubelet. Here the kubelet is whatever set a
:class:`~rayop.sim.nodes.container_exec.ContainerExecutor` on the application
(``rayop up --real-ray``): ``exec`` runs the command as a local process in the container's
process environment and ``portforward`` dials the pod's loopback address
(``streaming/``: WebSocket ``v5``/``v4.channel.k8s.io``, SPDY/3.1, and SPDY tunnelled in a
WebSocket; port-forward also over the ``v4.channel.k8s.io`` WebSocket channels). A container that is not running answers as the kubelet does (``container not
found ("name")``, which kubectl shows as "unable to upgrade connection: ..."). Without an
executor (the simulated kubelet runs no process), and always for ``attach``, the answer is
``501`` with a Status saying why. The simulated kubelet's executor
(:mod:`rayop.sim.dashboard.simulated_exec`) serves what a simulated pod honestly can: port-forward
to a simulated head's dashboard, Serve and agent ports, and ``tar`` over its simulated Ray log
directory; any other exec answers ``501`` naming what the simulated container does run.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from rayop.sim.apiserver.pod_log import choose_container
from rayop.sim.apiserver.request import ApiRequest, ServerContext
from rayop.sim.apiserver.streaming.exec_process import ExecOptions
from rayop.sim.apiserver.streaming.exec_spdy import serve_exec_spdy
from rayop.sim.apiserver.streaming.exec_websocket import serve_exec_websocket
from rayop.sim.apiserver.streaming.portforward import (
    PORTFORWARD_PROTOCOL,
    serve_port_forward_session,
)
from rayop.sim.apiserver.streaming.portforward_websocket import serve_port_forward_websocket
from rayop.sim.apiserver.streaming.spdy_upgrade import (
    SPDY_TUNNEL_PREFIX,
    negotiate,
    open_raw_spdy,
    open_tunnelled_spdy,
)
from rayop.sim.machinery import errors as se
from rayop.sim.nodes.container_exec import CONTAINER_EXECUTOR_KEY, ContainerProcessEnv

__all__ = ["STREAMING_SUBRESOURCES", "handle_pod_stream"]

STREAMING_SUBRESOURCES = frozenset({"exec", "attach", "portforward"})
"""The pod subresources that need a process behind the kubelet."""

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"", "0", "f", "F", "FALSE", "false", "False"})


def not_supported(subresource: str, pod: str, why: str = "") -> se.StatusError:
    """Returns the 501 Status for a streaming subresource of ``pod``."""
    why = why or f'pod "{pod}" runs no container process in the embedded control plane'
    body = se.status_body(
        501, "", f"{subresource} is not supported on the simulated kubelet: {why}"
    )
    body.pop("reason")
    return se.StatusError(body)


def _flag(request: web.Request, name: str) -> bool:
    value = request.query.get(name, "")
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise se.bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax')


def exec_options(request: web.Request) -> ExecOptions:
    """Reads PodExecOptions from the query, with the kubelet's rules (no stderr with a tty).

    Raises:
        StatusError: 400 for a malformed flag or no stream at all.
    """
    tty = _flag(request, "tty")
    stdin, stdout = _flag(request, "stdin"), _flag(request, "stdout")
    stderr = _flag(request, "stderr") and not tty
    if not (stdin or stdout or stderr):
        raise se.bad_request("you must specify at least 1 of stdin, stdout, stderr")
    command = tuple(request.query.getall("command", []))
    return ExecOptions(command, stdin, stdout, stderr, tty)


def _kubelet_error(message: str) -> web.Response:
    """The kubelet's answer to an upgrade it cannot serve: 500 with plain text."""
    return web.Response(status=500, text=message)


def _is_websocket(request: web.Request) -> bool:
    return request.headers.get("Upgrade", "").lower() == "websocket"


def _upgrade_required() -> se.StatusError:
    return se.bad_request("Upgrade request required")


async def handle_pod_stream(
    ctx: ServerContext, request: web.Request, req: ApiRequest
) -> web.StreamResponse:
    """Answers ``pods/<name>/exec|attach|portforward``: upgrades and relays, or refuses why."""
    if request.method not in ("GET", "POST"):
        raise se.method_not_allowed()
    name, namespace = req.name or "", req.namespace or ""
    pod = ctx.store.peek(req.info, namespace, name)
    if pod is None:
        raise se.not_found("pods", "", name)
    if req.subresource == "attach":
        choose_container(pod, request.query.get("container", ""))
        raise not_supported("attach", name, "attach is not implemented; use exec")
    container = ""
    if req.subresource == "exec":
        container = choose_container(pod, request.query.get("container", ""))
    executor = request.app.get(CONTAINER_EXECUTOR_KEY)
    if executor is None:
        raise not_supported(req.subresource, name)
    if not str((pod.get("spec") or {}).get("nodeName") or ""):
        raise se.bad_request(f"pod {name} does not have a host assigned")
    if req.subresource == "exec":
        options = exec_options(request)
        env = executor.process_env(pod, container)
        if env is None:
            return _kubelet_error(f'container not found ("{container}")')
        refused = env.refusal(options.command)
        if refused is not None:
            raise not_supported("exec", name, refused)
        return await _serve_exec(request, env, options)
    env = executor.process_env(pod, _first_container(pod))
    if env is None:
        return _kubelet_error(f'pod not found ("{name}_{namespace}")')
    uid = str((pod.get("metadata") or {}).get("uid") or "")
    return await _serve_port_forward(request, env, name, uid)


def _first_container(pod: dict[str, Any]) -> str:
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    return str(containers[0].get("name") or "")


async def _serve_exec(
    request: web.Request, env: ContainerProcessEnv, options: ExecOptions
) -> web.StreamResponse:
    if _is_websocket(request):
        return await serve_exec_websocket(request, env, options)
    if request.headers.get("Upgrade", "").upper().startswith("SPDY/3.1"):
        return await serve_exec_spdy(request, env, options)
    raise _upgrade_required()


async def _serve_port_forward(
    request: web.Request, env: ContainerProcessEnv, pod: str, uid: str
) -> web.StreamResponse:
    if _is_websocket(request):
        offered = [
            p.strip()
            for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",")
            if p.strip()
        ]
        tunnel = SPDY_TUNNEL_PREFIX + PORTFORWARD_PROTOCOL
        if tunnel not in offered:
            return await serve_port_forward_websocket(request, env, pod, uid)
        async with open_tunnelled_spdy(request, tunnel) as (session, response):
            await serve_port_forward_session(session, env, pod, uid)
        return response
    if request.headers.get("Upgrade", "").upper().startswith("SPDY/3.1"):
        protocol = negotiate(request, (PORTFORWARD_PROTOCOL,))
        async with open_raw_spdy(request, protocol) as (session, response):
            await serve_port_forward_session(session, env, pod, uid)
        return response
    raise _upgrade_required()
