"""Parsing wire JSON into a ray.io model for validation, naming what does not parse."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

__all__ = ["parse_model"]

_M = TypeVar("_M", bound=BaseModel)


def parse_model(model: type[_M], obj: _M | Mapping[str, Any]) -> tuple[_M | None, list[str]]:
    """Returns ``obj`` parsed as ``model`` and no problems, or None and each parse error
    (``spec.headGroupSpec: Field required``); a model instance is returned as it is."""
    if isinstance(obj, model):
        return obj, []
    try:
        return model.model_validate(obj), []
    except ValidationError as error:
        return None, [
            f"{'.'.join(str(part) for part in e['loc'])}: {e['msg']}" for e in error.errors()
        ]
