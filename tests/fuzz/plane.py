"""The embedded API server for fuzz tests: in-process, ray.io CRDs installed, on a loop of its own.

Hypothesis runs a test's examples one after the other in a plain function, so the server runs
on an event loop this module owns, and each example sends its request with :meth:`FuzzPlane.run`
(bounded in time: a request that does not finish is a hang, and fails the test).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Iterator
from contextlib import AsyncExitStack
from typing import Any, TypeVar

from rayop.api.crds import build_crds
from tests.sim.server_harness import Harness, open_harness

__all__ = ["REQUEST_SECONDS", "FuzzPlane", "open_fuzz_plane"]

_T = TypeVar("_T")
REQUEST_SECONDS = 10.0
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


class FuzzPlane:
    """A running harness and the loop it runs on."""

    def __init__(self, loop: asyncio.AbstractEventLoop, harness: Harness) -> None:
        self.loop = loop
        self.h = harness

    def run(self, coro: Coroutine[Any, Any, _T], seconds: float = REQUEST_SECONDS) -> _T:
        """Runs ``coro`` on the plane's loop; a TimeoutError when it takes over ``seconds``."""
        return self.loop.run_until_complete(asyncio.wait_for(coro, seconds))


@contextlib.contextmanager
def open_fuzz_plane(*, crds: bool = True) -> Iterator[FuzzPlane]:
    """Starts the harness (with rayop's CRDs) on a new loop; stops it and closes the loop."""
    loop = asyncio.new_event_loop()
    stack = AsyncExitStack()
    try:
        harness = loop.run_until_complete(stack.enter_async_context(open_harness()))
        plane = FuzzPlane(loop, harness)
        if crds:
            for crd in build_crds():
                code, body = plane.run(harness.call("POST", CRDS, crd))
                assert code == 201, body
        yield plane
    finally:
        loop.run_until_complete(stack.aclose())
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
