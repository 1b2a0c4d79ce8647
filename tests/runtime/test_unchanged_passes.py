"""Periodic passes that could only repeat the last one: counted requests, and when one is skipped."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st

from rayop.runtime.unchanged_passes import UnchangedPasses, counting_requests, note_request


async def test_requests_are_counted_in_the_block_and_in_the_tasks_it_starts() -> None:
    note_request("GET", "/outside")  # outside any block: counted nowhere
    with counting_requests() as outer:
        note_request("GET", "/a")

        async def child() -> None:
            note_request("POST", "/b")

        await asyncio.gather(child(), child())
        with counting_requests() as inner:
            note_request("GET", "/c")
        note_request("PUT", "/d")
    note_request("GET", "/after")
    assert (outer.sent, inner.sent) == (4, 1)


def test_a_quiet_pass_is_followed_by_a_skip_until_a_cache_changes() -> None:
    changes = [0]
    passes: UnchangedPasses[str] = UnchangedPasses(lambda: changes[0])
    stamp = passes.begin("a")
    assert stamp == 0
    passes.settle("a", stamp, quiet=True)
    assert passes.begin("a") is None and passes.skipped == 1
    assert passes.begin("b") == 0, "another object's pass runs"
    changes[0] += 1
    assert passes.begin("a") == 1, "a cache changed: the pass runs"


def test_a_pass_that_was_not_quiet_or_failed_is_never_skipped_after() -> None:
    passes: UnchangedPasses[str] = UnchangedPasses(lambda: 7)
    passes.settle("a", 7, quiet=True)
    passes.settle("a", 7, quiet=False)
    assert passes.begin("a") == 7
    passes.settle("a", 7, quiet=True)
    passes.forget("a")
    assert passes.begin("a") == 7 and len(passes) == 0


def test_a_pass_that_began_before_a_change_is_not_skipped_after_it() -> None:
    changes = [3]
    passes: UnchangedPasses[str] = UnchangedPasses(lambda: changes[0])
    stamp = passes.begin("a")
    assert stamp is not None
    changes[0] += 1  # a watch event arrived while the pass ran
    passes.settle("a", stamp, quiet=True)
    assert passes.begin("a") == 4


_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("change"), st.just(""), st.booleans()),
        st.tuples(st.just("pass"), st.sampled_from("abc"), st.booleans()),
        st.tuples(st.just("forget"), st.sampled_from("abc"), st.booleans()),
    ),
    max_size=60,
)


@given(_STEPS)
def test_a_pass_is_skipped_exactly_when_its_last_run_was_quiet_and_nothing_changed_since(
    steps: list[tuple[str, str, bool]],
) -> None:
    changes = [0]
    passes: UnchangedPasses[str] = UnchangedPasses(lambda: changes[0])
    last_quiet_at: dict[str, int] = {}  # the model: the change count when a quiet run began
    for action, key, quiet in steps:
        if action == "change":
            changes[0] += 1
        elif action == "forget":
            passes.forget(key)
            last_quiet_at.pop(key, None)
        else:
            expect_skip = last_quiet_at.get(key) == changes[0]
            stamp = passes.begin(key)
            assert (stamp is None) == expect_skip
            if stamp is not None:
                passes.settle(key, stamp, quiet=quiet)
                if quiet:
                    last_quiet_at[key] = stamp
                else:
                    last_quiet_at.pop(key, None)
