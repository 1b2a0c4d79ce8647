"""Decoding of the JSON objects an API server sends, in responses and watch streams."""

from __future__ import annotations

from typing import Any

import orjson

from rayop.kube.errors import ApiError, failure_status


def decode_object(data: bytes, *, what: str) -> dict[str, Any]:
    """Decodes one JSON object with orjson into plain dicts; never blocks.

    Args:
        data: The JSON text.
        what: Names the data in the error message (``"response"``, ``"watch event"``).

    Raises:
        ApiError: ``data`` is not a JSON object (an InternalError Status).
    """
    try:
        decoded = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ApiError(
            failure_status(500, "InternalError", f"cannot decode {what}: {exc}")
        ) from exc
    if not isinstance(decoded, dict):
        raise ApiError(failure_status(500, "InternalError", f"{what} is not a JSON object"))
    return decoded
