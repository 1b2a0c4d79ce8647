"""The kit's own tests use its pytest plugin's fixtures (imported here, as a user's conftest
would list ``pytest_plugins = ["rayop.testing.pytest_plugin"]`` at the root of their tests)."""

from rayop.testing.pytest_plugin import control_plane, fake_clock, ray_operator

__all__ = ["control_plane", "fake_clock", "ray_operator"]
