"""The TokenRequest subresource: ``POST .../serviceaccounts/<name>/token`` issues a bearer token.

The token authenticates as ``system:serviceaccount:<namespace>:<name>`` (see
:mod:`rayop.sim.apiserver.rbac`). ``expirationSeconds`` is echoed (default one hour, as Kubernetes) but
not enforced: tokens stay valid while the ServiceAccount exists and the server runs.
"""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from rayop.sim.apiserver.negotiation import decode_body, respond
from rayop.sim.apiserver.rbac import Rbac
from rayop.sim.apiserver.request import ApiRequest, ServerContext
from rayop.sim.machinery import errors as se
from rayop.sim.machinery.timestamps import timestamp

__all__ = ["handle_token_request"]

_DEFAULT_EXPIRATION = 3600


async def handle_token_request(
    ctx: ServerContext, request: web.Request, req: ApiRequest, rbac: Rbac
) -> web.Response:
    """Serves one TokenRequest create; returns the TokenRequest with ``status.token`` set.

    Raises:
        StatusError: 405 for another verb, 400 for a malformed body, 404 for a missing
            ServiceAccount.
    """
    if req.verb != "create" or not req.name or not req.namespace:
        raise se.method_not_allowed()
    body: Any = await decode_body(request, req.info)  # JSON, YAML or protobuf (client-go)
    spec = dict((body or {}).get("spec") or {}) if isinstance(body, dict) else {}
    expiration = int(spec.get("expirationSeconds") or _DEFAULT_EXPIRATION)
    spec["expirationSeconds"] = expiration
    spec.setdefault("audiences", [])
    token = rbac.issue_token(req.namespace, req.name)
    now = time.time()
    return respond(
        request,
        req.info,
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "metadata": {
                "name": req.name,
                "namespace": req.namespace,
                "creationTimestamp": timestamp(now),
            },
            "spec": spec,
            "status": {"token": token, "expirationTimestamp": timestamp(now + expiration)},
        },
        201,
    )
