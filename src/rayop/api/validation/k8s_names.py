"""The Kubernetes name and label rules KubeRay's validation applies, with apimachinery's messages.

KubeRay checks object names with ``IsDNS1035Label`` and group labels with ``IsQualifiedName`` and
``IsValidLabelValue`` and prints the error lists they return inside its own messages, so the
lists here are the very strings apimachinery v0.36 returns (its ``MaxLenError`` says
"characters" in ``util/validation`` and "bytes" in ``api/validate/content``), and
:func:`go_list` prints a list as Go's ``%v`` does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "dns1035_label_errors",
    "dns1123_label_errors",
    "go_list",
    "label_key_errors",
    "label_value_errors",
    "object_name_problem",
]

_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _LABEL_KEY_FMT + ")?"

_DNS1035 = re.compile(_DNS1035_FMT)
_DNS1123_LABEL = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN = re.compile(_DNS1123_SUBDOMAIN_FMT)
_LABEL_KEY = re.compile(_LABEL_KEY_FMT)
_LABEL_VALUE = re.compile(_LABEL_VALUE_FMT)

_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character"
)
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character"
)
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character"
)


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    """Returns apimachinery's ``RegexError`` text: the message, examples and the regex."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def go_list(items: Sequence[str]) -> str:
    """Returns a list of strings printed as Go's ``%v`` prints a ``[]string``."""
    return "[" + " ".join(items) + "]"


def _length_and_pattern_errors(
    value: str, limit: int, unit: str, pattern: re.Pattern[str], message: str, *examples: str
) -> list[str]:
    """Returns what an apimachinery check of a maximum length and a pattern finds wrong with
    ``value``: ``unit`` is "characters" or "bytes" (UTF-8), as the check counts; ``message`` and
    ``examples`` word the pattern's error."""
    size = len(value) if unit == "characters" else len(value.encode())
    errors = []
    if size > limit:
        errors.append(f"must be no more than {limit} {unit}")
    if not pattern.fullmatch(value):
        errors.append(_regex_error(message, pattern.pattern, *examples))
    return errors


def dns1035_label_errors(value: str) -> list[str]:
    """Returns what ``IsDNS1035Label`` finds wrong with ``value`` (empty when valid)."""
    return _length_and_pattern_errors(
        value, 63, "characters", _DNS1035, _DNS1035_MSG, "my-name", "abc-123"
    )


def dns1123_label_errors(value: str) -> list[str]:
    """Returns what ``IsDNS1123Label`` finds wrong with ``value`` (empty when valid)."""
    return _length_and_pattern_errors(
        value, 63, "characters", _DNS1123_LABEL, _DNS1123_LABEL_MSG, "my-name", "123-abc"
    )


def object_name_problem(metadata: Mapping[str, Any], max_length: int, lead: str) -> str | None:
    """Returns KubeRay's message about a Ray object's name (``lead`` starts it: "RayCluster name
    should"), None when it is valid or not given yet with ``generateName`` set (the API server
    names the object before any check, admission or reconcile, runs)."""
    name = str(metadata.get("name") or "")
    if not name and metadata.get("generateName"):
        return None
    if len(name) > max_length:
        return f"{lead} be no more than {max_length} characters"
    if errors := dns1035_label_errors(name):
        return f"{lead} be a valid DNS1035 label: {go_list(errors)}"
    return None


def _subdomain_errors(value: str) -> list[str]:
    return _length_and_pattern_errors(
        value, 253, "bytes", _DNS1123_SUBDOMAIN, _SUBDOMAIN_MSG, "example.com"
    )


def label_key_errors(value: str) -> list[str]:
    """Returns what ``IsQualifiedName`` (a label key) finds wrong with ``value``."""
    parts = value.split("/")
    errors: list[str] = []
    if len(parts) > 2:
        example = _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        return [
            f"a valid label key {example} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors += [f"prefix part {e}" for e in _subdomain_errors(prefix)]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errors.append("name part must be no more than 63 bytes")
    if not _LABEL_KEY.fullmatch(name):
        errors.append(
            "name part "
            + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return errors


def label_value_errors(value: str) -> list[str]:
    """Returns what ``IsValidLabelValue`` finds wrong with ``value``."""
    return _length_and_pattern_errors(
        value, 63, "bytes", _LABEL_VALUE, _LABEL_VALUE_MSG, "MyValue", "my_value", "12345"
    )
