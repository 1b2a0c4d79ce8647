"""Generated ray.io objects through the embedded API server's admission (CRD schema pruning,
defaulting, validation; object-meta validation): a valid object is created, anything else gets a
4xx Status naming what is wrong (422 with the field of every cause), never a 5xx or a hang."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given

from .budget import fuzz_settings
from .objects import RESOURCES, every_wrong_type, fuzzed_objects
from .plane import REQUEST_SECONDS, FuzzPlane, open_fuzz_plane

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def plane() -> Iterator[FuzzPlane]:
    with open_fuzz_plane() as running:
        yield running


def _path(kind: str, name: str | None = None) -> str:
    r = RESOURCES[kind]
    base = f"/apis/{r.group}/{r.version}/namespaces/default/{r.plural}"
    return base if name is None else f"{base}/{name}"


def _check_answer(code: int, body: Any) -> None:
    """A 2xx, or a 4xx Status that says what is wrong."""
    assert code < 500, body
    if code < 300:
        return
    assert code in (400, 409, 413, 422), body
    assert isinstance(body, dict) and body.get("kind") == "Status", body
    assert body["code"] == code and body["message"], body
    if code == 422:
        causes = body["details"]["causes"]
        assert causes and all(c.get("field") for c in causes), body


def _dotted(path: tuple[str | int, ...]) -> str:
    """A path as kube-apiserver names a field: ``spec.workerGroupSpecs[0].replicas``."""
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else f".{step}"
    return text.lstrip(".")


def _submit(plane: FuzzPlane, kind: str, obj: Obj) -> tuple[int, Any]:
    start = time.monotonic()
    raw = json.dumps(obj).encode()  # Python's json: integers past 64 bits too
    code, body = plane.run(plane.h.call("POST", _path(kind), raw))
    assert time.monotonic() - start < REQUEST_SECONDS
    _check_answer(code, body)
    if code == 201:  # leave the namespace empty for the next example (and try the delete)
        name = body["metadata"]["name"]
        deleted, gone = plane.run(plane.h.call("DELETE", _path(kind, name)))
        assert deleted in (200, 202), gone
    return code, body


def test_generated_objects_are_created_or_refused_with_a_4xx_naming_the_field(
    plane: FuzzPlane,
) -> None:
    seen: dict[tuple[str, int], int] = {}

    @fuzz_settings()
    @given(fuzzed_objects())
    def one(case: tuple[str, str, Obj]) -> None:
        kind, family, obj = case
        code, body = _submit(plane, kind, obj)
        if family == "valid":
            assert code == 201, body
        seen[(family, code)] = seen.get((family, code), 0) + 1

    one()
    print(f"admission answers by (family, status): {dict(sorted(seen.items()))}")
    assert any(code == 201 for _, code in seen), seen
    assert any(code >= 400 for _, code in seen), seen


@pytest.mark.parametrize("kind", sorted(RESOURCES))
def test_every_field_given_every_wrong_type_in_turn(plane: FuzzPlane, kind: str) -> None:
    """A field the schema types refuses each other type with a 422 naming the field (the
    schema leaves some free: x-kubernetes-preserve-unknown-fields, int-or-string)."""
    answers: dict[int, int] = {}
    for path, _given, obj in every_wrong_type(kind):
        code, body = _submit(plane, kind, obj)
        answers[code] = answers.get(code, 0) + 1
        if code == 422:
            want = _dotted(path)
            fields = [c["field"] for c in body["details"]["causes"]]
            assert any(want.startswith(f) or f.startswith(want) for f in fields), (want, fields)
    assert answers.get(422, 0) > 0, answers
