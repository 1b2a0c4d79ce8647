"""The typed decode of a write's body: a value of the wrong type is the client's 400.

kube-apiserver decodes every body into its Go type before anything looks at the object, so a
value of the wrong type (``"containers": 3``, ``"generateName": 4``) is a 400 BadRequest
("... cannot be handled as a Pod: json: cannot unmarshal ...", from the decoding in
https://github.com/kubernetes/apiserver/blob/master/pkg/endpoints/handlers/create.go). The
embedded plane keeps objects as dicts; :func:`check_types` decodes a body into its kind's
generated protobuf message (built-in kinds: the whole object) or into ObjectMeta (custom
resources, whose other fields their CRD schema types), so that nothing mistyped is stored,
to break a later reader (a protobuf watch, the garbage collector) with a server error.
"""

from __future__ import annotations

from typing import Any

from rayop.sim.apiserver.protobuf import message_class
from rayop.sim.apiserver.protobuf_json import ConversionError, new_message
from rayop.sim.machinery import errors as se
from rayop.sim.machinery.resources import ResourceInfo

__all__ = ["check_types"]


def check_types(info: ResourceInfo, body: Any) -> None:
    """Refuses a body with a value that does not fit its field's type.

    Raises:
        StatusError: 400 naming the field.
    """
    cls = message_class(info.api_version, info.kind)
    try:
        if cls is not None:
            new_message(cls, body)
        elif isinstance(body, dict) and isinstance(body.get("metadata"), dict):
            meta = message_class("v1", "ObjectMeta")
            assert meta is not None
            new_message(meta, body["metadata"])
    except ConversionError as exc:
        version = info.api_version.rsplit("/", 1)[-1]
        where = "" if cls is not None else "metadata."
        raise se.bad_request(
            f'{info.kind} in version "{version}" cannot be handled as a {info.kind}: {where}{exc}'
        ) from exc
