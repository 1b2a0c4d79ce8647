"""Validating admission webhooks, called as kube-apiserver calls them (admissionregistration/v1).

For each create or update, every webhook of every ValidatingWebhookConfiguration whose rules
match the request (API group, version, resource, operation; ``objectSelector`` matchLabels) is
sent an ``admission.k8s.io/v1`` AdmissionReview over HTTPS, trusting the webhook's
``caBundle``, with the ``?timeout=<n>s`` query and the webhook's ``timeoutSeconds`` (10 s by
default). The answers come back as kube-apiserver's errors:

* a refusal: the webhook's Status, its message prefixed
  ``admission webhook "<name>" denied the request: `` (code at least 400);
* a webhook that cannot be called (refused connection, timeout, TLS failure, an invalid
  response): with ``failurePolicy: Fail`` (the default) a 500 ``Internal error occurred:
  failed calling webhook "<name>": failed to call webhook: Post "<url>": <cause>``; with
  ``Ignore`` the request goes on.

A webhook configured with a ``service`` is reached through ``resolve_service`` (the embedded
plane has no cluster network); ``namespaceSelector`` and ``matchConditions`` are not evaluated
(every namespace matches), which the module says rather than hides.
"""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from rayop.sim.machinery import errors as se

__all__ = ["AdmissionAttributes", "ServiceResolver", "call_validating_webhooks"]

ServiceResolver = Callable[[str, str, int], str | None]
"""(namespace, name, port) of a webhook Service -> ``https://host:port`` to call, or None."""


@dataclass(frozen=True)
class AdmissionAttributes:
    """What one admission request is about."""

    group: str
    version: str
    resource: str
    kind: str
    operation: str
    namespace: str
    name: str
    obj: Mapping[str, Any] | None
    old_obj: Mapping[str, Any] | None = None
    subresource: str = ""
    username: str = "system:admin"
    groups: tuple[str, ...] = field(default=("system:masters", "system:authenticated"))


def _matches_rule(rule: Mapping[str, Any], attrs: AdmissionAttributes) -> bool:
    def listed(values: Any, value: str) -> bool:
        return isinstance(values, list) and ("*" in values or value in values)

    resource = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
    resources = rule.get("resources") or []
    resource_ok = (
        resource in resources
        or "*/*" in resources
        or (not attrs.subresource and "*" in resources)
        or (attrs.subresource != "" and f"*/{attrs.subresource}" in resources)
    )
    return (
        listed(rule.get("apiGroups"), attrs.group)
        and listed(rule.get("apiVersions"), attrs.version)
        and listed(rule.get("operations"), attrs.operation)
        and resource_ok
    )


def _matches_object(webhook: Mapping[str, Any], attrs: AdmissionAttributes) -> bool:
    selector = (webhook.get("objectSelector") or {}).get("matchLabels") or {}
    if not selector:
        return True
    for obj in (attrs.obj, attrs.old_obj):
        labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
        if all(labels.get(k) == v for k, v in selector.items()):
            return True
    return False


def _review(attrs: AdmissionAttributes, uid: str) -> dict[str, Any]:
    request: dict[str, Any] = {
        "uid": uid,
        "kind": {"group": attrs.group, "version": attrs.version, "kind": attrs.kind},
        "resource": {"group": attrs.group, "version": attrs.version, "resource": attrs.resource},
        "requestKind": {"group": attrs.group, "version": attrs.version, "kind": attrs.kind},
        "requestResource": {
            "group": attrs.group,
            "version": attrs.version,
            "resource": attrs.resource,
        },
        "name": attrs.name,
        "operation": attrs.operation,
        "userInfo": {"username": attrs.username, "groups": list(attrs.groups)},
        "object": attrs.obj,
        "oldObject": attrs.old_obj,
        "dryRun": False,
        "options": {"kind": f"{attrs.operation.title()}Options", "apiVersion": "meta.k8s.io/v1"},
    }
    if attrs.subresource:
        request["subResource"] = attrs.subresource
    if attrs.namespace:
        request["namespace"] = attrs.namespace
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


class _CallFailed(Exception):
    """The webhook could not be called or answered nonsense (``failurePolicy`` decides)."""


def _ssl_context(client: Mapping[str, Any]) -> ssl.SSLContext:
    context = ssl.create_default_context()
    bundle = client.get("caBundle")
    if bundle:
        context.load_verify_locations(cadata=base64.b64decode(bundle).decode())
    return context


def _url(client: Mapping[str, Any], resolve: ServiceResolver | None) -> str:
    if client.get("url"):
        return str(client["url"])
    service = client.get("service") or {}
    port = int(service.get("port") or 443)
    base = None
    if resolve is not None:
        base = resolve(str(service.get("namespace", "")), str(service.get("name", "")), port)
    if base is None:
        raise _CallFailed(
            f"service {service.get('namespace')}/{service.get('name')}:{port} cannot be "
            "reached from the embedded control plane; register the webhook with a url"
        )
    return base.rstrip("/") + str(service.get("path") or "")


def _cause(err: BaseException) -> str:
    if isinstance(err, TimeoutError):
        return "context deadline exceeded"
    if isinstance(err, aiohttp.ClientConnectorCertificateError):
        return f"tls: failed to verify certificate: {err.certificate_error}"
    if isinstance(err, aiohttp.ClientConnectorError):
        return f"dial tcp {err.host}:{err.port}: connect: connection refused"
    return str(err) or type(err).__name__


async def _call(
    session: aiohttp.ClientSession,
    webhook: Mapping[str, Any],
    attrs: AdmissionAttributes,
    resolve: ServiceResolver | None,
) -> Mapping[str, Any]:
    client = webhook.get("clientConfig") or {}
    seconds = int(webhook.get("timeoutSeconds") or 10)
    url = _url(client, resolve)
    target = f"{url}{'&' if '?' in url else '?'}timeout={seconds}s"
    uid = str(uuid.uuid4())
    try:
        async with asyncio.timeout(seconds):
            async with session.post(
                target, json=_review(attrs, uid), ssl=_ssl_context(client)
            ) as response:
                body = await response.read()
                if response.status != 200:
                    raise _CallFailed(
                        f'Post "{target}": the server responded with status {response.status}'
                    )
    except _CallFailed:
        raise
    except (TimeoutError, aiohttp.ClientError, ssl.SSLError, OSError) as err:
        raise _CallFailed(f'failed to call webhook: Post "{target}": {_cause(err)}') from err
    try:
        answer = json.loads(body)["response"]
    except (ValueError, KeyError, TypeError) as err:
        raise _CallFailed(f"received invalid webhook response: {err}") from err
    if not isinstance(answer, dict) or answer.get("uid") != uid:
        raise _CallFailed(
            "received invalid webhook response: expected response.uid="
            f"{uid!r}, got {answer.get('uid') if isinstance(answer, dict) else None!r}"
        )
    return answer


def _denied(name: str, result: Mapping[str, Any] | None) -> se.StatusError:
    """kube-apiserver's ``ToStatusErr``."""
    status = dict(result or {})
    denied_by = f'admission webhook "{name}" denied the request'
    status["code"] = max(int(status.get("code") or 0), 400)
    if status.get("status") in (None, "", "Success"):
        status["status"] = "Failure"
    if status.get("message"):
        status["message"] = f"{denied_by}: {status['message']}"
    elif status.get("reason"):
        status["message"] = f"{denied_by}: {status['reason']}"
    else:
        status["message"] = f"{denied_by} without explanation"
    status.setdefault("kind", "Status")
    status.setdefault("apiVersion", "v1")
    status.setdefault("metadata", {})
    return se.StatusError(status)


async def call_validating_webhooks(
    configurations: Iterable[Mapping[str, Any]],
    attrs: AdmissionAttributes,
    *,
    resolve_service: ServiceResolver | None = None,
) -> None:
    """Calls every matching validating webhook; returns when all allow the request.

    Blocks on the webhook calls (each bounded by its timeout).

    Raises:
        rayop.sim.machinery.errors.StatusError: a webhook refused, or failed with
            ``failurePolicy: Fail``.
    """
    hooks = [
        webhook
        for config in configurations
        for webhook in config.get("webhooks") or []
        if any(_matches_rule(r, attrs) for r in webhook.get("rules") or [])
        and _matches_object(webhook, attrs)
    ]
    if not hooks:
        return
    async with aiohttp.ClientSession() as session:
        for webhook in hooks:
            name = str(webhook.get("name", ""))
            try:
                answer = await _call(session, webhook, attrs, resolve_service)
            except _CallFailed as err:
                if webhook.get("failurePolicy", "Fail") == "Ignore":
                    continue
                raise se.internal_error(f'failed calling webhook "{name}": {err}') from err
            if not answer.get("allowed"):
                raise _denied(name, answer.get("status"))
