"""The embedded Gateway implementation's view of a Gateway: its listeners and its status.

:func:`evaluate_listeners` judges each listener as a Gateway implementation does:

* protocol ``HTTP`` and ``HTTPS`` are supported; any other is ``Accepted=False``
  (``UnsupportedProtocol``);
* an ``HTTPS`` listener's ``tls.certificateRefs`` must name Secrets (core group) holding
  ``tls.crt`` and ``tls.key``, in the Gateway's namespace or allowed by a ReferenceGrant
  (``ResolvedRefs=False``: ``InvalidCertificateRef`` or ``RefNotPermitted``);
* ``allowedRoutes.kinds`` may name only ``HTTPRoute`` (``ResolvedRefs=False``,
  ``InvalidRouteKinds``, otherwise); ``supportedKinds`` lists what is left of them;
* listeners sharing a port with another protocol are ``Conflicted`` (``ProtocolConflict``),
  with the same protocol and hostname ``Conflicted`` (``HostnameConflict``).

:func:`gateway_status` then writes the status: ``Accepted`` (``ListenersNotValid`` when some or
all listeners are invalid, ``UnsupportedAddress`` for ``spec.addresses`` of a type other than
``IPAddress`` or ``Hostname``), ``Programmed``, ``addresses`` (the requested ones, else a host
name ``<gateway>.<namespace>.gateway.rayop.internal``: the plane has no data plane to give an IP
address to) and each listener's ``attachedRoutes``, ``supportedKinds`` and conditions
``Accepted``, ``Programmed``, ``ResolvedRefs``, ``Conflicted``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rayop.apimachinery.labels import LabelSelector, label_selector_from_dict
from rayop.apimachinery.objects import Obj
from rayop.sim.controller_manager.gateway_api import (
    GROUP,
    condition,
    core_reference,
    keep_transition_times,
)

SUPPORTED_PROTOCOLS = ("HTTP", "HTTPS")
ROUTE_KIND = "HTTPRoute"
ADDRESS_DOMAIN = "gateway.rayop.internal"

Verdict = tuple[bool, str, str]
"""(ok, reason, message) of one condition."""


@dataclass
class Listener:
    """One listener and what the implementation concluded about it."""

    name: str
    port: int
    protocol: str
    hostname: str
    allowed_from: str
    selector: LabelSelector | None
    kinds: list[dict[str, str]]
    accepted: Verdict = (True, "Accepted", "Listener is accepted")
    resolved: Verdict = (True, "ResolvedRefs", "All references are resolved")
    conflicted: Verdict = (False, "NoConflicts", "No conflicts")
    attached: int = field(default=0)

    @property
    def usable(self) -> bool:
        """Whether routes can attach: accepted and free of conflicts."""
        return self.accepted[0] and not self.conflicted[0]

    @property
    def programmed(self) -> bool:
        """Whether the listener serves: usable with every reference resolved."""
        return self.usable and self.resolved[0]


SecretLookup = Callable[[str, str], Obj | None]
GrantLookup = Callable[[str], Iterable[Obj]]


def _route_kinds(spec: Mapping[str, Any]) -> tuple[list[dict[str, str]], bool]:
    """Returns the supported kinds a listener allows and whether it named unsupported ones."""
    named = ((spec.get("allowedRoutes") or {}).get("kinds")) or []
    if not named:
        return [{"group": GROUP, "kind": ROUTE_KIND}], False
    kinds = [
        {"group": GROUP, "kind": ROUTE_KIND}
        for k in named
        if (k.get("group") or GROUP) == GROUP and k.get("kind") == ROUTE_KIND
    ]
    return kinds[:1], len(kinds) != len(named)


def _certificates(
    gateway: Obj, spec: Mapping[str, Any], secret: SecretLookup, grants: GrantLookup
) -> Verdict:
    namespace = str(gateway["metadata"].get("namespace") or "")
    for ref in (spec.get("tls") or {}).get("certificateRefs") or []:
        where, name, problem = core_reference(
            ref, from_kind="Gateway", from_namespace=namespace, to_kind="Secret", grants=grants
        )
        if problem == "kind":
            return False, "InvalidCertificateRef", f"unsupported certificate reference {name}"
        if problem == "grant":
            return False, "RefNotPermitted", f"no ReferenceGrant allows Secret {where}/{name}"
        data = (secret(where, name) or {}).get("data") or {}
        if "tls.crt" not in data or "tls.key" not in data:
            return False, "InvalidCertificateRef", f"Secret {where}/{name} holds no TLS key pair"
    return True, "ResolvedRefs", "All references are resolved"


def evaluate_listeners(gateway: Obj, secret: SecretLookup, grants: GrantLookup) -> list[Listener]:
    """Returns the Gateway's listeners with their verdicts (see the module)."""
    listeners: list[Listener] = []
    for spec in (gateway.get("spec") or {}).get("listeners") or []:
        allowed = ((spec.get("allowedRoutes") or {}).get("namespaces")) or {}
        selector = allowed.get("selector")
        kinds, foreign = _route_kinds(spec)
        listener = Listener(
            name=str(spec.get("name") or ""),
            port=int(spec.get("port") or 0),
            protocol=str(spec.get("protocol") or ""),
            hostname=str(spec.get("hostname") or ""),
            allowed_from=str(allowed.get("from") or "Same"),
            selector=label_selector_from_dict(selector) if isinstance(selector, dict) else None,
            kinds=kinds,
        )
        if listener.protocol not in SUPPORTED_PROTOCOLS:
            listener.accepted = (
                False,
                "UnsupportedProtocol",
                f"protocol {listener.protocol} is not supported",
            )
            listener.kinds = []
        elif foreign:
            listener.resolved = (False, "InvalidRouteKinds", "only HTTPRoute is supported")
        if listener.accepted[0] and listener.resolved[0] and listener.protocol == "HTTPS":
            listener.resolved = _certificates(gateway, spec, secret, grants)
        listeners.append(listener)
    _mark_conflicts(listeners)
    return listeners


def _mark_conflicts(listeners: list[Listener]) -> None:
    protocols: dict[int, set[str]] = {}
    for li in listeners:
        protocols.setdefault(li.port, set()).add(li.protocol)
    hosts = Counter((li.port, li.protocol, li.hostname) for li in listeners)
    for li in listeners:
        if len(protocols[li.port]) > 1:
            li.conflicted = (True, "ProtocolConflict", f"port {li.port} has several protocols")
        elif hosts[(li.port, li.protocol, li.hostname)] > 1:
            li.conflicted = (True, "HostnameConflict", "another listener has the same hostname")


def _addresses(gateway: Obj) -> tuple[list[dict[str, str]], Verdict]:
    md = gateway["metadata"]
    asked = (gateway.get("spec") or {}).get("addresses") or []
    unsupported = [
        a for a in asked if (a.get("type") or "IPAddress") not in ("IPAddress", "Hostname")
    ]
    if unsupported:
        return [], (False, "UnsupportedAddress", "only IPAddress and Hostname are supported")
    if asked:
        found = [
            {"type": a.get("type") or "IPAddress", "value": str(a.get("value"))} for a in asked
        ]
        return found, (True, "Programmed", "Gateway is programmed")
    host = f"{md.get('name')}.{md.get('namespace')}.{ADDRESS_DOMAIN}"
    return [{"type": "Hostname", "value": host}], (True, "Programmed", "Gateway is programmed")


def _accepted(listeners: list[Listener], address: Verdict) -> Verdict:
    if not address[0]:
        return address
    bad = [li.name for li in listeners if not li.accepted[0]]
    if bad and len(bad) == len(listeners):
        return False, "ListenersNotValid", "no listener is valid"
    if bad:
        return True, "ListenersNotValid", f"invalid listeners: {', '.join(bad)}"
    return True, "Accepted", "Gateway is accepted"


def gateway_status(gateway: Obj, listeners: list[Listener], now: str) -> dict[str, Any]:
    """Returns the Gateway's status (``attached`` counted by the caller), keeping the old
    transition times of conditions that did not change."""
    generation = gateway["metadata"].get("generation")
    old = gateway.get("status") or {}
    addresses, address = _addresses(gateway)
    accepted = _accepted(listeners, address)
    programmed = (
        (True, "Programmed", "Gateway is programmed")
        if accepted[0] and any(li.programmed for li in listeners)
        else (False, "Invalid", "Gateway is not programmed")
    )
    old_listeners = {li.get("name"): li for li in old.get("listeners") or []}
    status: dict[str, Any] = {
        "conditions": keep_transition_times(
            [
                condition("Accepted", *accepted, generation, now),
                condition("Programmed", *programmed, generation, now),
            ],
            old.get("conditions"),
        ),
        "listeners": [
            {
                "name": li.name,
                "supportedKinds": li.kinds,
                "attachedRoutes": li.attached,
                "conditions": keep_transition_times(
                    _listener_conditions(li, generation, now),
                    (old_listeners.get(li.name) or {}).get("conditions"),
                ),
            }
            for li in listeners
        ],
    }
    if accepted[0]:
        status["addresses"] = addresses
    return status


def _listener_conditions(li: Listener, generation: Any, now: str) -> list[dict[str, Any]]:
    programmed: Verdict = (
        (True, "Programmed", "Listener is programmed")
        if li.programmed
        else (False, "Invalid", "Listener is not programmed")
    )
    return [
        condition("Accepted", *li.accepted, generation, now),
        condition("Programmed", *programmed, generation, now),
        condition("ResolvedRefs", *li.resolved, generation, now),
        condition("Conflicted", *li.conflicted, generation, now),
    ]
