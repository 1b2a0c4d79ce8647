"""Tests of the public test kit (rayop.testing)."""
