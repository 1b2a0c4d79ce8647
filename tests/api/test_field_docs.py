"""rayop.api.field_docs: the CRD descriptions come from the class body that declares a field."""

from __future__ import annotations

from rayop.api.common import ApiModel
from rayop.api.field_docs import field_docstring


class Base(ApiModel):
    size: int = 0
    """How big.

    In units.
    """
    colour: str = ""
    """The colour."""
    plain: str = ""


class Child(Base):
    colour: str = "red"
    shape: str = ""
    """The shape."""


def test_a_field_docstring_is_the_cleaned_string_below_it() -> None:
    assert field_docstring(Base, "size") == "How big.\n\nIn units."
    assert field_docstring(Base, "plain") is None


def test_an_inherited_field_keeps_its_docstring_and_a_redeclared_one_has_its_own() -> None:
    assert field_docstring(Child, "size") == "How big.\n\nIn units."
    assert field_docstring(Child, "shape") == "The shape."
    assert field_docstring(Child, "colour") is None
    assert field_docstring(Child, "missing") is None


def test_the_models_no_longer_parse_their_source_when_created() -> None:
    assert Base.model_fields["size"].description is None
