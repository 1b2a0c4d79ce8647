"""How advice writes a duration in a sentence."""

from __future__ import annotations


def fmt_seconds(value: float | None) -> str:
    """Formats seconds for a sentence ("12 s", "0.35 s", "4 ms", "n/a")."""
    if value is None:
        return "n/a"
    if value >= 10:
        return f"{value:.0f} s"
    if value >= 0.1:
        return f"{value:.2f} s"
    return f"{value * 1000:.0f} ms"
