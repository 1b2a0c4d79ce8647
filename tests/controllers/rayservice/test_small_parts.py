"""Serve-config cache, deploy decision and the deletion schedule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rayop.api.rayservice import RayServiceSpec
from rayop.controllers.dashboard.models import ServeApplicationDetails, ServeDetails
from rayop.controllers.rayservice.cleanup import deletion_delay, scheduled_deletion
from rayop.controllers.rayservice.serve_cache import ServeConfigCache
from rayop.controllers.rayservice.serve_config import needs_deploy, serve_config_json
from rayop.controllers.rayservice.settings import DELETION_TIMESTAMP_ANNOTATION

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


def _spec(**fields: object) -> RayServiceSpec:
    head: dict[str, object] = {"rayStartParams": {}, "template": {}}
    return RayServiceSpec.model_validate({"rayClusterConfig": {"headGroupSpec": head}, **fields})


def test_deletion_delay_defaults_to_60_seconds() -> None:
    assert deletion_delay(_spec()) == timedelta(seconds=60)
    assert deletion_delay(_spec(rayClusterDeletionDelaySeconds=0)) == timedelta(0)
    assert deletion_delay(_spec(rayClusterDeletionDelaySeconds=5)) == timedelta(seconds=5)


def test_schedule_is_read_from_the_annotation_in_either_precision() -> None:
    when = datetime(2023, 11, 14, 22, 13, 20, 250000, tzinfo=UTC)
    for text in ("2023-11-14T22:13:20.250Z", "2023-11-14T22:13:20.250000Z"):
        cluster = {"metadata": {"annotations": {DELETION_TIMESTAMP_ANNOTATION: text}}}
        assert scheduled_deletion(cluster) == when
    assert scheduled_deletion({"metadata": {}}) is None
    garbage = {"metadata": {"annotations": {DELETION_TIMESTAMP_ANNOTATION: "garbage"}}}
    assert scheduled_deletion(garbage) is None
