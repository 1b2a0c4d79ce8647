"""The embedded API server's heap freezer (``rayop apiserver``)."""

from __future__ import annotations

import asyncio
import gc
import logging

import pytest

from rayop.sim import heap


@pytest.mark.looptime
async def test_the_heap_is_frozen_every_interval_and_slow_collections_are_logged(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(heap, "SLOW_COLLECTION", 0.0)  # every collection counts as slow
    callbacks = list(gc.callbacks)
    before = gc.get_freeze_count()
    task = asyncio.create_task(heap.freeze_heap_every(5.0))
    try:
        await asyncio.sleep(4.0)
        assert gc.get_freeze_count() == before
        await asyncio.sleep(2.0)
        assert gc.get_freeze_count() > before  # frozen once, 5 s in
        with caplog.at_level(logging.WARNING, logger=heap.__name__):
            gc.collect()
        assert "garbage collection of generation 2 stopped the server" in caplog.text
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        gc.unfreeze()  # this is a test process: give its objects back to the collector
    assert gc.callbacks == callbacks
