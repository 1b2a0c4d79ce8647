"""The aliases for a Kubernetes object as JSON decodes it (a ``dict`` of plain values)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["Obj", "ObjView"]

Obj = dict[str, Any]
"""A Kubernetes object (or any JSON object inside one) that the holder may change."""

ObjView = Mapping[str, Any]
"""A Kubernetes object read only (a cache's shared copy, a frozen snapshot...)."""
