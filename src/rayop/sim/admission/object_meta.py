"""Object-meta validation kube-apiserver applies to every object: names, labels, annotations.

Controllers trip over these limits in real clusters (a 64-character label value, an
upper-case name), so the embedded server enforces them too and answers 422 Invalid.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rayop.sim.machinery import errors as se
from rayop.sim.machinery.resources import ResourceInfo

__all__ = ["validate_object_meta"]

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_1123_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
# resource key -> (regex, max length, message)
_NAME_RULES: dict[str, tuple[re.Pattern[str], int, str]] = {
    "/namespaces": (_LABEL_1123, 63, _1123_MSG),
    "/services": (_LABEL_1035, 63, _1035_MSG),
}


def _name_causes(info: ResourceInfo, name: str) -> list[tuple[str, str, str]]:
    rx, max_len, msg = _NAME_RULES.get(info.key, (_SUBDOMAIN, 253, _SUBDOMAIN_MSG))
    out: list[tuple[str, str, str]] = []
    if len(name) > max_len:
        out.append(
            (
                "metadata.name",
                "FieldValueInvalid",
                f'Invalid value: "{name}": must be no more than {max_len} characters',
            )
        )
    if not rx.match(name):
        out.append(("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": {msg}'))
    return out


def _key_causes(field: str, key: str) -> list[tuple[str, str, str]]:
    prefix, _, name = key.rpartition("/")
    bad = (
        not name
        or len(name) > 63
        or not _QUALIFIED.match(name)
        or (prefix and (len(prefix) > 253 or not _SUBDOMAIN.match(prefix)))
        or key.count("/") > 1
    )
    if bad:
        return [
            (
                field,
                "FieldValueInvalid",
                f'Invalid value: "{key}": name part must consist of alphanumeric characters, '
                "'-', '_' or '.', and must start and end with an alphanumeric character",
            )
        ]
    return []


def _label_causes(labels: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    for k, v in labels.items():
        out += _key_causes("metadata.labels", str(k))
        if not isinstance(v, str):
            out.append(
                (
                    "metadata.labels",
                    "FieldValueTypeInvalid",
                    f"Invalid value: {v!r}: label values must be strings",
                )
            )
        elif len(v) > 63:
            out.append(
                (
                    "metadata.labels",
                    "FieldValueInvalid",
                    f'Invalid value: "{v}": must be no more than 63 characters',
                )
            )
        elif not _LABEL_VALUE.match(v):
            out.append(
                (
                    "metadata.labels",
                    "FieldValueInvalid",
                    f'Invalid value: "{v}": a valid label must be an empty string or consist '
                    "of alphanumeric characters, '-', '_' or '.', and must start and end with "
                    "an alphanumeric character",
                )
            )
    return out


def validate_object_meta(info: ResourceInfo, obj: Mapping[str, Any], *, check_name: bool) -> None:
    """Checks name (when ``check_name``), labels and annotation keys of ``obj``.

    Raises:
        StatusError: 422 Invalid listing every problem.
    """
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    causes = _name_causes(info, name) if check_name else []
    labels = meta.get("labels")
    if labels:
        if isinstance(labels, Mapping):
            causes += _label_causes(labels)
        else:
            causes.append(("metadata.labels", "FieldValueTypeInvalid", "must be an object"))
    annotations = meta.get("annotations")
    if annotations and isinstance(annotations, Mapping):
        for k in annotations:
            causes += _key_causes("metadata.annotations", str(k))
    if causes:
        raise se.invalid(info.kind, info.group, name, causes)
