"""`rayop up`'s banner shows URLs a user can open for the operator's endpoints."""

from __future__ import annotations

import pytest

from rayop.cli.up import _local_url


@pytest.mark.parametrize(
    ("addr", "url"),
    [
        (":8080", "http://localhost:8080"),
        ("127.0.0.1:18931", "http://127.0.0.1:18931"),
        ("0.0.0.0:8082", "http://localhost:8082"),
    ],
)
def test_a_bind_address_becomes_a_local_url(addr: str, url: str) -> None:
    assert _local_url(addr, None) == url


def test_a_port_chosen_by_the_system_is_shown_as_bound() -> None:
    assert _local_url(":0", 40123) == "http://localhost:40123"
    assert _local_url("127.0.0.1:0", 40124) == "http://127.0.0.1:40124"
