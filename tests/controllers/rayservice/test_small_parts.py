"""Serve-config cache, deploy decision, deletion schedule and the wall clock."""

from __future__ import annotations

import pytest

from rayop.controllers.dashboard.models import ServeApplicationDetails, ServeDetails
from rayop.controllers.rayservice.cleanup import deletion_delay, scheduled_deletion
from rayop.controllers.rayservice.context import WallClock, parse_rfc3339, rfc3339
from rayop.controllers.rayservice.serve_cache import ServeConfigCache
from rayop.controllers.rayservice.serve_config import needs_deploy, serve_config_json
from rayop.controllers.rayservice.settings import DELETION_TIMESTAMP_ANNOTATION
from rayop.testing.clock import FakeClock

RUNNING = ServeDetails(applications={"a": ServeApplicationDetails(name="a", status="RUNNING")})


def test_deploy_only_when_uncached_changed_or_apps_lost() -> None:
    assert needs_deploy(None, "cfg", RUNNING)
    assert not needs_deploy("cfg", "cfg", RUNNING)
    assert needs_deploy("old", "cfg", RUNNING)
    assert needs_deploy("cfg", "cfg", ServeDetails())


def test_serve_config_yaml_becomes_json_body() -> None:
    body = serve_config_json("applications:\n  - name: a\n    import_path: m:app\n")
    assert body == {"applications": [{"name": "a", "import_path": "m:app"}]}
    with pytest.raises(ValueError):
        serve_config_json("- just a list")


def test_cache_is_per_cluster_prunable_and_bounded() -> None:
    cache = ServeConfigCache(capacity=2)
    cache.put("ns", "s1", "c1", "x")
    cache.put("ns", "s1", "c2", "y")
    assert cache.get("ns", "s1", "c1") == "x"
    cache.prune("ns", "s1", keep=["c2"])
    assert cache.get("ns", "s1", "c1") is None and cache.get("ns", "s1", "c2") == "y"
    cache.put("ns", "s2", "c", "z")
    cache.put("ns", "s3", "c", "w")
    assert len(cache) == 2 and cache.get("ns", "s1", "c2") is None


def test_deletion_delay_defaults_to_60_seconds() -> None:
    assert deletion_delay({"spec": {}}) == 60.0
    assert deletion_delay({"spec": {"rayClusterDeletionDelaySeconds": 0}}) == 0.0
    assert deletion_delay({"spec": {"rayClusterDeletionDelaySeconds": 5}}) == 5.0


def test_schedule_round_trips_through_the_annotation_with_milliseconds() -> None:
    when = 1_700_000_000.25
    text = rfc3339(when, fraction=True)
    assert text == "2023-11-14T22:13:20.250Z"
    cluster = {"metadata": {"annotations": {DELETION_TIMESTAMP_ANNOTATION: text}}}
    assert scheduled_deletion(cluster) == pytest.approx(when)
    assert scheduled_deletion({"metadata": {}}) is None
    assert parse_rfc3339("garbage") is None


def test_wall_clock_advances_with_the_injected_clock() -> None:
    clock = FakeClock()
    wall = WallClock(clock, epoch=1_000_000.0)
    assert wall.now() == 1_000_000.0
    clock.step(2.5)
    assert wall.now() == 1_000_002.5
