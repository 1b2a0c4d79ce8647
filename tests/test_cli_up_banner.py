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
    assert _local_url(addr) == url
