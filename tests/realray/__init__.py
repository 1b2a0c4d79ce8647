"""The real-Ray tier (pytest -m realray tests/realray; scripts/test-realray)."""
