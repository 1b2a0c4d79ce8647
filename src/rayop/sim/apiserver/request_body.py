"""Reading and bounding request bodies: kube-apiserver's 3 MiB limit, nesting and alias bounds.

A write's body is read at most :data:`MAX_BODY_BYTES` long, as kube-apiserver reads it
(``MaxRequestBodyBytes``, 3 MiB, in k8s.io/apiserver/pkg/server/config.go:
https://github.com/kubernetes/apiserver/blob/master/pkg/server/config.go; a longer body gets
413 ``RequestEntityTooLarge`` "limit is 3145728" from ``limitedReadBody`` in
https://github.com/kubernetes/apiserver/blob/master/pkg/endpoints/handlers/rest.go). A
Content-Length over the limit is refused before anything is read.

A decoded body is then bounded in shape, so that what a client sends cannot exhaust the
server: at most :data:`MAX_DEPTH` levels of nesting (the store, admission and the encoders walk
objects recursively, and Python's recursion limit is about 1000 frames), and at most
:data:`MAX_EXPANDED_VALUES` values once YAML aliases are expanded (a "billion laughs" document
is a few hundred bytes that expand to gigabytes; go-yaml, which kube-apiserver decodes YAML
with, refuses excessive aliasing the same way: https://github.com/go-yaml/yaml/blob/v2/decode.go).
"""

from __future__ import annotations

from typing import Any

import yaml
from aiohttp import web

from rayop.sim.machinery import errors as se

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_DEPTH",
    "MAX_EXPANDED_VALUES",
    "check_shape",
    "load_yaml",
    "read_body",
    "too_large",
]

MAX_BODY_BYTES = 3 * 1024 * 1024
MAX_DEPTH = 100
MAX_EXPANDED_VALUES = 1_000_000

_BODY: web.RequestKey[bytes] = web.RequestKey("rayop_sim_body", bytes)
_CHUNK = 64 * 1024
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def too_large() -> se.StatusError:
    """413 RequestEntityTooLarge, in kube-apiserver's words."""
    return se.StatusError(
        se.status_body(
            413,
            "RequestEntityTooLarge",
            f"Request entity too large: limit is {MAX_BODY_BYTES}",
        )
    )


async def read_body(request: web.Request) -> bytes:
    """Returns the request body (read once, then remembered on the request).

    Raises:
        StatusError: 413 when the body is longer than :data:`MAX_BODY_BYTES`.
    """
    if _BODY in request:
        return request[_BODY]
    length = request.content_length
    if length is not None and length > MAX_BODY_BYTES:
        raise too_large()
    parts: list[bytes] = []
    size = 0
    while chunk := await request.content.read(_CHUNK):
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise too_large()
        parts.append(chunk)
    raw = b"".join(parts)
    request[_BODY] = raw
    return raw


def load_yaml(raw: bytes | str) -> Any:
    """Parses YAML (or JSON) with libyaml when it is there, which bounds its own nesting.

    Raises:
        yaml.YAMLError: The text is not YAML.
        RecursionError: The pure-Python parser went too deep.
    """
    return yaml.load(raw, Loader=_LOADER)  # a safe loader (CSafeLoader or SafeLoader)


def check_shape(value: Any, *, shared: bool = False) -> None:
    """Refuses a decoded body nested too deeply or, when it may share parts (``shared``: YAML,
    whose aliases do), too large once those parts are expanded.

    Raises:
        StatusError: 400 naming the bound exceeded.
    """
    if not shared:  # JSON: every container appears once; only the depth matters
        if isinstance(value, dict | list):
            _check_depth(value, 0)
        return
    total, _height = _measure(value, 0, {})
    if total > MAX_EXPANDED_VALUES:
        raise se.bad_request(
            f"the request body expands to more than {MAX_EXPANDED_VALUES} values "
            "(excessive aliasing)"
        )


def _check_depth(value: Any, depth: int) -> None:
    if depth >= MAX_DEPTH:
        raise _too_deep()
    children = value.values() if isinstance(value, dict) else value
    for child in children:
        if isinstance(child, dict | list):
            _check_depth(child, depth + 1)


def _measure(value: Any, depth: int, seen: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """(values, height) of ``value``, shared containers counted at each use; raises past
    :data:`MAX_DEPTH`."""
    if not isinstance(value, dict | list):
        return 1, 0
    known = seen.get(id(value))
    if known is None:
        if depth >= MAX_DEPTH:
            raise _too_deep()
        children = value.values() if isinstance(value, dict) else value
        total, height = 1, 0
        for child in children:
            size, child_height = _measure(child, depth + 1, seen)
            total += size
            height = max(height, child_height + 1)
            if total > MAX_EXPANDED_VALUES:
                break
        known = seen[id(value)] = (total, height)
    if depth + known[1] > MAX_DEPTH:
        raise _too_deep()
    return known


def _too_deep() -> se.StatusError:
    return se.bad_request(f"the request body is nested more than {MAX_DEPTH} levels deep")
