"""Typed query parameters: integers read as kube-apiserver's parameter codec reads them.

kube-apiserver converts ``limit``, ``timeoutSeconds`` and ``gracePeriodSeconds`` to int64 and
answers 400 BadRequest when one does not parse
(https://github.com/kubernetes/apimachinery/blob/master/pkg/runtime/conversion.go); a float,
``nan`` or ``inf`` is refused the same way, never let through to a timer.
"""

from __future__ import annotations

from collections.abc import Mapping

from rayop.sim.machinery import errors as se

__all__ = ["int_param"]

_INT64 = 2**63


def int_param(query: Mapping[str, str], name: str) -> int | None:
    """The integer value of query parameter ``name`` (None when absent or empty).

    Raises:
        StatusError: 400 naming the parameter when the value is not a 64-bit integer.
    """
    raw = query.get(name)
    if raw is None or raw == "":
        return None
    text = raw
    digits = text[1:] if text[:1] in ("-", "+") else text
    if not digits.isascii() or not digits.isdigit() or not -_INT64 <= int(text) < _INT64:
        raise se.bad_request(f'{name}: strconv.ParseInt: parsing "{raw}": invalid syntax')
    return int(text)
