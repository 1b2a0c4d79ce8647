"""A simulated entrypoint that sleeps runs at least that long (long-running jobs for benches)."""

from __future__ import annotations

import pytest

from rayop.sim.dashboard.jobs import JobTable, JobTimings, entrypoint_sleep_seconds
from rayop.testing import FakeClock


@pytest.mark.parametrize(
    ("entrypoint", "seconds"),
    [
        ("sleep 3600", 3600.0),
        ("echo start; sleep 2.5 && echo done", 2.5),
        ("python -c 'import time; time.sleep(30)'", 30.0),
        ("sleep 1; sleep 2", 3.0),
        ("python /home/ray/samples/sample_code.py", None),
        ("python nosleep 5", None),
    ],
)
def test_entrypoint_sleep_seconds(entrypoint: str, seconds: float | None) -> None:
    assert entrypoint_sleep_seconds(entrypoint) == seconds


def test_a_sleeping_job_runs_until_its_sleep_ends() -> None:
    clock = FakeClock()
    table = JobTable(clock=clock, timings=JobTimings(), node_ip="10.0.0.1", node_seed="uid")
    long = table.submit({"entrypoint": "sleep 600", "submission_id": "long"})
    short = table.submit({"entrypoint": "sleep 0", "submission_id": "short"})
    clock.step(300)
    assert long.status_at(clock.time()) == "RUNNING"
    assert short.status_at(clock.time()) == "SUCCEEDED"  # the configured 1 s still applies
    clock.step(301)
    assert long.status_at(clock.time()) == "SUCCEEDED"
