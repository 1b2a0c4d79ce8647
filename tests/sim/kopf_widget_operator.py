"""A small kopf operator for the independent-client test: handlers of the Widget custom resource.

Run by ``kopf run --standalone -A`` against `rayop apiserver` (tests/sim/test_kopf_client.py).
kopf watches Widgets, adds its finalizer, writes each handler's result into the status with
merge patches; the handlers post core/v1 Events through kopf's event poster. It authenticates
from the kubeconfig in ``$KUBECONFIG`` through the official ``kubernetes`` client.
"""

from __future__ import annotations

from typing import Any

import kopf

GROUP, VERSION, PLURAL = "rayop.test", "v1", "widgets"


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    """Names kopf's finalizer after the test group and keeps watches short."""
    settings.persistence.finalizer = "rayop.test/kopf-finalizer"
    settings.watching.server_timeout = 30


@kopf.on.create(GROUP, VERSION, PLURAL)
def created(body: kopf.Body, spec: kopf.Spec, **_: Any) -> dict[str, Any]:
    """Posts an Event and reports the size it saw; kopf stores it in ``status.created``."""
    kopf.info(body, reason="Created", message=f"widget of size {spec.get('size')}")
    return {"size": spec.get("size")}


@kopf.on.field(GROUP, VERSION, PLURAL, field="spec.size")
def resized(old: Any, new: Any, **_: Any) -> dict[str, Any]:
    """Reports a size change; kopf stores it in ``status.resized``."""
    return {"from": old, "to": new}


@kopf.on.delete(GROUP, VERSION, PLURAL)
def deleted(body: kopf.Body, name: str, **_: Any) -> None:
    """Posts an Event about the deletion; kopf then removes its finalizer."""
    kopf.info(body, reason="Deleting", message=f"widget {name} is going away")
