"""Resources build the REST paths of the core group and named groups."""

from __future__ import annotations

import pytest

from rayop.kube import resources
from rayop.kube.resource import Resource


def test_core_and_group_paths() -> None:
    assert resources.PODS.path() == "/api/v1/pods"
    assert resources.PODS.path("ns") == "/api/v1/namespaces/ns/pods"
    assert resources.PODS.path("ns", "p", "status") == "/api/v1/namespaces/ns/pods/p/status"
    assert (
        resources.RAY_CLUSTERS.path("default", "rc")
        == "/apis/ray.io/v1/namespaces/default/rayclusters/rc"
    )
    assert resources.CRDS.path(name="rayclusters.ray.io") == (
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/rayclusters.ray.io"
    )
    assert resources.NAMESPACES.path(name="default") == "/api/v1/namespaces/default"


def test_api_version_and_misuse() -> None:
    assert resources.PODS.api_version == "v1"
    assert resources.EVENTS.api_version == "events.k8s.io/v1"
    assert resources.CORE_EVENTS.api_version == "v1"
    assert resources.RAY_JOBS.api_version == "ray.io/v1"
    assert resources.RAY_SERVICES.kind == "RayService"
    assert not resources.NAMESPACES.namespaced
    with pytest.raises(ValueError):
        resources.NAMESPACES.path("ns")
    with pytest.raises(ValueError):
        resources.PODS.path("ns", subresource="status")
    assert hash(Resource("", "v1", "pods", "Pod")) == hash(resources.PODS)
