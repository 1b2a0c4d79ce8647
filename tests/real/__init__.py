"""The real control-plane tier (pytest -m real tests/real; scripts/test-real)."""
