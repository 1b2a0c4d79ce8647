"""The attribute docstrings of a model's fields, read from its source for the CRD descriptions.

A field's description in a generated CRD is the string literal written just below the field
in its class body. Only the CRD generator (:mod:`rayop.api.schema`) needs them, so they are
read from the source when a CRD is built, not by pydantic each time a model class is created
(``use_attribute_docstrings`` parsed the source of every ray.io class at each operator start:
~15 ms of CPU). A field's docstring is the one written in the class whose body declares the
field (a subclass that declares a field again without one gives it none), cleaned as
:func:`inspect.cleandoc` cleans docstrings, as pydantic does. Each module's source is parsed
once, for all of its classes.
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
from collections.abc import Iterator, Mapping

__all__ = ["field_docstring"]


def field_docstring(model: type, field: str) -> str | None:
    """Returns the docstring written below ``field`` in the class of ``model``'s MRO that
    declares it, or None."""
    for owner in model.__mro__:
        if field in inspect.get_annotations(owner):
            return _module_docstrings(owner.__module__).get(owner.__qualname__, {}).get(field)
    return None


@functools.cache
def _module_docstrings(module: str) -> Mapping[str, Mapping[str, str]]:
    """Class qualified name -> (field name -> docstring) for every class of ``module``."""
    try:
        source = inspect.getsource(sys.modules[module])
    except (KeyError, OSError, TypeError):
        return {}
    return dict(_classes(ast.parse(source).body, ""))


def _classes(body: list[ast.stmt], prefix: str) -> Iterator[tuple[str, dict[str, str]]]:
    for node in body:
        if isinstance(node, ast.ClassDef):
            name = prefix + node.name
            yield name, _attribute_docstrings(node)
            yield from _classes(node.body, name + ".")


def _attribute_docstrings(node: ast.ClassDef) -> dict[str, str]:
    docs: dict[str, str] = {}
    for previous, statement in zip(node.body, node.body[1:], strict=False):
        if (
            isinstance(previous, ast.AnnAssign)
            and isinstance(previous.target, ast.Name)
            and isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
        ):
            docs[previous.target.id] = inspect.cleandoc(statement.value.value)
    return docs
