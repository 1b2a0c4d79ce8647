"""How many examples a fuzz test runs: a short seeded run in the fast tier, a long run on demand.

The fast tier runs each fuzz test with :data:`SHORT` examples, derandomized (the same examples
on every run). ``RAYOP_FUZZ_EXAMPLES=10000 pytest tests/fuzz`` is the long run
(docs/operations.md), derandomized too, so a failure found replays with the same command.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

__all__ = ["SHORT", "examples", "fuzz_settings"]

SHORT = 150


def examples(short: int = SHORT, *, share: float = 1.0) -> int:
    """The number of examples: ``share`` of ``RAYOP_FUZZ_EXAMPLES`` when set, else ``short``."""
    wanted = os.environ.get("RAYOP_FUZZ_EXAMPLES")
    return max(short, int(int(wanted) * share)) if wanted else short


def fuzz_settings(short: int = SHORT, *, share: float = 1.0) -> settings:
    """Hypothesis settings of one fuzz test (no deadline: the tests bound time themselves);
    ``share`` scales the long run for a test whose examples are slow."""
    return settings(
        max_examples=examples(short, share=share),
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
            HealthCheck.filter_too_much,
        ],
    )
