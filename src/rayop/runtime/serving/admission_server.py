"""A validating admission webhook server: AdmissionReview v1 over HTTPS, as controller-runtime.

The API server POSTs an ``admission.k8s.io/v1`` ``AdmissionReview`` to a path; the handler
registered for that path looks at ``request`` (operation, object, oldObject) and returns an
:class:`AdmissionVerdict`; the server answers with the review's ``response`` (same ``uid``,
``allowed``, and a ``status`` when refused). A body that is not an AdmissionReview gets HTTP 400,
and a handler that raises is a refusal with code 500 naming the error (never a silent allow).
The server speaks only TLS (kube-apiserver calls webhooks over HTTPS); certificates come from a
directory holding ``tls.crt`` and ``tls.key`` (controller-runtime's ``--webhook-cert-dir``
layout), see :mod:`rayop.runtime.serving.serving_cert`.
"""

from __future__ import annotations

import json
import logging
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from rayop.runtime.serving.endpoints import HttpServer

__all__ = ["AdmissionServer", "AdmissionVerdict", "Handler", "admission_app", "review_response"]

log = logging.getLogger(__name__)

REVIEW_API_VERSION = "admission.k8s.io/v1"


@dataclass(frozen=True)
class AdmissionVerdict:
    """What a handler decides about one admission request.

    Attributes:
        allowed: Whether the request may go on.
        status: A ``metav1.Status`` (code, reason, message, details) saying why not.
        warnings: Warnings shown to the client (kubectl prints them).
    """

    allowed: bool
    status: Mapping[str, Any] | None = None
    warnings: tuple[str, ...] = field(default=())


Handler = Callable[[Mapping[str, Any]], AdmissionVerdict]
"""Decides one ``AdmissionReview.request``; must not block."""


def review_response(uid: str, verdict: AdmissionVerdict) -> dict[str, Any]:
    """Returns the AdmissionReview that answers the request ``uid`` with ``verdict``."""
    response: dict[str, Any] = {"uid": uid, "allowed": verdict.allowed}
    if verdict.status is not None:
        response["status"] = dict(verdict.status)
    if verdict.warnings:
        response["warnings"] = list(verdict.warnings)
    return {"apiVersion": REVIEW_API_VERSION, "kind": "AdmissionReview", "response": response}


def _decide(handler: Handler, request: Mapping[str, Any]) -> AdmissionVerdict:
    try:
        return handler(request)
    except Exception as err:  # a broken handler refuses; it never lets an object through
        log.exception("admission handler failed")
        return AdmissionVerdict(
            allowed=False,
            status={"code": 500, "reason": "InternalError", "message": f"{err}"},
        )


def admission_app(handlers: Mapping[str, Handler]) -> web.Application:
    """Returns an aiohttp application that serves each handler at its path (POST only)."""

    def endpoint(handler: Handler) -> Callable[[web.Request], Any]:
        async def review(request: web.Request) -> web.Response:
            try:
                body = json.loads(await request.read())
            except ValueError as err:
                return web.Response(status=400, text=f"the body is not JSON: {err}")
            req = body.get("request") if isinstance(body, dict) else None
            if (
                not isinstance(body, dict)
                or body.get("kind") != "AdmissionReview"
                or not isinstance(req, dict)
                or not req.get("uid")
            ):
                return web.Response(status=400, text="the body is not an AdmissionReview request")
            answer = review_response(str(req["uid"]), _decide(handler, req))
            return web.json_response(answer)

        return review

    app = web.Application()
    for path, handler in handlers.items():
        app.router.add_post(path, endpoint(handler))
    return app


def server_context(cert_dir: Path) -> ssl.SSLContext:
    """Returns a TLS server context from ``cert_dir``'s ``tls.crt`` and ``tls.key``.

    Raises:
        OSError: a file is missing or unreadable.
        ssl.SSLError: they are not a certificate and its key.
    """
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_dir / "tls.crt", cert_dir / "tls.key")
    return context


class AdmissionServer:
    """Serves admission handlers over HTTPS on one address.

    Args:
        handlers: Path -> handler.
        cert_dir: Directory with ``tls.crt`` and ``tls.key``.
        host: Interface to bind.
        port: Port to bind (0 picks a free one; :attr:`port` tells which after :meth:`start`).
    """

    def __init__(
        self,
        handlers: Mapping[str, Handler],
        cert_dir: Path,
        host: str = "0.0.0.0",
        port: int = 9443,
    ) -> None:
        self._app = admission_app(handlers)
        self._cert_dir = cert_dir
        self._host = host
        self.port = port
        self._server: HttpServer | None = None

    async def start(self) -> None:
        """Loads the certificate, binds and starts serving.

        Raises:
            BindError: the address cannot be bound (an OSError).
            OSError: the certificate files cannot be read.
            ssl.SSLError: the certificate files are not a certificate and its key.
        """
        server = HttpServer(
            self._app,
            self._host,
            self.port,
            ssl_context=server_context(self._cert_dir),
            name="webhook",
        )
        await server.start()
        self._server = server
        self.port = server.port
        log.info("admission webhook server listening on %s:%d", self._host, self.port)

    async def stop(self) -> None:
        """Stops serving and closes every connection."""
        if self._server is not None:
            await self._server.stop()
            self._server = None
