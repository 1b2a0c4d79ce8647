"""``pods/exec``, ``pods/attach`` and ``pods/portforward``: refused with a clear Status.

kube-apiserver upgrades these requests (WebSocket or SPDY) and relays them to the node's
kubelet. The simulated kubelet runs no process, so there is nothing to connect to: the pod is
looked up as kube-apiserver would (404 when it does not exist, 400 for an unknown container),
then the request is answered ``501`` with a Status saying why. kubectl shows that message
("unable to upgrade connection: ...").
"""

from __future__ import annotations

from aiohttp import web

from rayop.sim.apiserver.pod_log import choose_container
from rayop.sim.apiserver.request import ApiRequest, ServerContext
from rayop.sim.machinery import errors as se

__all__ = ["STREAMING_SUBRESOURCES", "handle_pod_stream"]

STREAMING_SUBRESOURCES = frozenset({"exec", "attach", "portforward"})
"""The pod subresources that need a process behind the kubelet."""


def not_supported(subresource: str, pod: str) -> se.StatusError:
    """Returns the 501 Status for a streaming subresource of ``pod``."""
    body = se.status_body(
        501,
        "",
        f'{subresource} is not supported on the simulated kubelet: pod "{pod}" runs no '
        "container process in the embedded control plane",
    )
    body.pop("reason")
    return se.StatusError(body)


async def handle_pod_stream(
    ctx: ServerContext, request: web.Request, req: ApiRequest
) -> web.StreamResponse:
    """Answers ``pods/<name>/exec|attach|portforward`` (never upgrades the connection)."""
    if request.method not in ("GET", "POST"):
        raise se.method_not_allowed()
    name, namespace = req.name or "", req.namespace or ""
    pod = ctx.store.peek(req.info, namespace, name)
    if pod is None:
        raise se.not_found("pods", "", name)
    if req.subresource != "portforward":
        choose_container(pod, request.query.get("container", ""))
    raise not_supported(req.subresource, name)
