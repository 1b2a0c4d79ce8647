"""What a pass learned of its Gateway and HTTPRoute (read before Serve, written after)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(kw_only=True)
class RouteState:
    """The RayService's Gateway and HTTPRoute as this pass knows them.

    Attributes:
        gateway: The Gateway as read (or as written this pass); None when missing.
        route: The HTTPRoute as read (or as written this pass); None when missing or not built.
        gateway_error: Why the Gateway could not be read ("" when it was).
        route_error: Why the HTTPRoute could not be read ("" when it was).
    """

    gateway: Mapping[str, Any] | None = None
    route: Mapping[str, Any] | None = None
    gateway_error: str = ""
    route_error: str = ""
