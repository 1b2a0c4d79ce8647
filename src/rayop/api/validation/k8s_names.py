"""The Kubernetes name and label rules KubeRay's validation applies, with apimachinery's messages.

KubeRay checks object names with ``IsDNS1035Label`` and group labels with ``IsQualifiedName`` and
``IsValidLabelValue`` and prints the error lists they return inside its own messages, so the
lists here are the very strings apimachinery v0.36 returns (its ``MaxLenError`` says
"characters" in ``util/validation`` and "bytes" in ``api/validate/content``), and
:func:`go_list` prints a list as Go's ``%v`` does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "dns1035_label_errors",
    "dns1123_label_errors",
    "go_list",
    "label_key_errors",
    "label_value_errors",
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


def dns1035_label_errors(value: str) -> list[str]:
    """Returns what ``IsDNS1035Label`` finds wrong with ``value`` (empty when valid)."""
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _DNS1035.fullmatch(value):
        errors.append(_regex_error(_DNS1035_MSG, _DNS1035_FMT, "my-name", "abc-123"))
    return errors


def dns1123_label_errors(value: str) -> list[str]:
    """Returns what ``IsDNS1123Label`` finds wrong with ``value`` (empty when valid)."""
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _DNS1123_LABEL.fullmatch(value):
        errors.append(_regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errors


def _subdomain_errors(value: str) -> list[str]:
    errors = []
    if len(value.encode()) > 253:
        errors.append("must be no more than 253 bytes")
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        errors.append(_regex_error(_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errors


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
    errors = []
    if len(value.encode()) > 63:
        errors.append("must be no more than 63 bytes")
    if not _LABEL_VALUE.fullmatch(value):
        errors.append(
            _regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return errors
