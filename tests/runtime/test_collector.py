"""rayop.runtime.process.collector: the cyclic collector's tuning for the operator process."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from rayop.runtime.process import collector


@pytest.fixture
def restored_collector() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


@pytest.mark.usefixtures("restored_collector")
def test_start_up_objects_leave_every_later_collection() -> None:
    before = [object()]  # a tracked container alive at start-up
    assert any(o is before for o in gc.get_objects())
    collector.tune_collector()
    assert gc.get_freeze_count() > 0
    assert not any(o is before for o in gc.get_objects())
    after: list[object] = []
    assert any(o is after for o in gc.get_objects())


@pytest.mark.usefixtures("restored_collector")
def test_young_generation_holds_ten_thousand_allocations() -> None:
    collector.tune_collector()
    assert gc.get_threshold() == (10_000, 10, 10)
    gc.collect(0)
    kept: list[list[int]] = [[] for _ in range(5_000)]  # more than the default threshold of 700
    assert gc.get_count()[0] >= len(kept)  # no young collection ran


@pytest.mark.usefixtures("restored_collector")
def test_rayop_run_tunes_the_collector_before_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio

    from typer.testing import CliRunner

    from rayop.cli.commands import loaded_app

    app = loaded_app()

    seen: list[tuple[int, int, int]] = []

    def fake_run(coro: object) -> None:
        seen.append(gc.get_threshold())
        close = getattr(coro, "close", None)
        if close is not None:
            close()

    monkeypatch.setattr(asyncio, "run", fake_run)
    result = CliRunner().invoke(app, ["run", "--enable-leader-election=false"])
    assert result.exit_code == 0, result.output
    assert seen == [
        (collector.YOUNG_THRESHOLD, collector.MIDDLE_THRESHOLD, collector.OLD_THRESHOLD)
    ]
    assert gc.isenabled()


def test_the_collector_is_paused_for_the_start_up_block_only() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector.collector_paused():
        assert not gc.isenabled()
        raise RuntimeError("a bad flag")
    assert gc.isenabled()
