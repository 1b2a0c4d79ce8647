"""Background job submissions: one POST per key at a time, its outcome reported once (to the
target it was for), nothing reported after a stop, a replacement or a no-longer-wanted key, and
no task left after close; unit cases, then a property over hypothesis-generated schedules."""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from rayop.controllers.dashboard.errors import DashboardUnavailable
from rayop.controllers.dashboard.job_poller import PollTarget
from rayop.controllers.dashboard.job_submissions import Finished, JobSubmissions

T1 = PollTarget(job_id="j1", dashboard_url="head-svc.ns.svc.cluster.local:8265", cluster_uid="u1")
T2 = PollTarget(job_id="j1", dashboard_url=T1.dashboard_url, cluster_uid="u2")


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


@dataclass
class Posts:
    """POSTs that end when the test says so; counts those in flight per key."""

    pending: dict[Hashable, list[asyncio.Future[None]]] = field(default_factory=dict)
    in_flight: dict[Hashable, int] = field(default_factory=dict)
    overlaps: int = 0
    sent: int = 0

    def post(self, key: Hashable) -> asyncio.Future[None]:
        async def run() -> None:
            self.sent += 1
            self.in_flight[key] = self.in_flight.get(key, 0) + 1
            if self.in_flight[key] > 1:
                self.overlaps += 1
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self.pending.setdefault(key, []).append(done)
            try:
                await done
            finally:
                self.in_flight[key] -= 1

        return asyncio.ensure_future(run())

    def end(self, key: Hashable, error: Exception | None = None) -> None:
        for done in self.pending.pop(key, []):
            if done.done():
                continue
            if error is None:
                done.set_result(None)
            else:
                done.set_exception(error)


def harness() -> tuple[JobSubmissions, Posts, list[Hashable]]:
    submissions = JobSubmissions(still_wanted=lambda key, target: True)
    done: list[Hashable] = []
    submissions.on_done = done.append
    return submissions, Posts(), done


async def test_one_post_at_a_time_and_its_outcome_taken_once() -> None:
    submissions, posts, done = harness()
    submissions.start("k", T1, lambda: posts.post("k"))
    submissions.start("k", T1, lambda: posts.post("k"))  # already running: nothing
    await settle()
    assert posts.sent == 1 and submissions.running("k", T1) and submissions.take("k", T1) is None
    posts.end("k")
    await settle()
    assert done == ["k"] and not submissions.running("k", T1)
    assert submissions.take("k", T1) == Finished()
    assert submissions.take("k", T1) is None and len(submissions) == 0
    await submissions.close()


async def test_an_error_is_kept_for_the_pass() -> None:
    submissions, posts, _ = harness()
    submissions.start("k", T1, lambda: posts.post("k"))
    await settle()
    error = DashboardUnavailable("timed out")
    posts.end("k", error)
    await settle()
    finished = submissions.take("k", T1)
    assert finished is not None and finished.error is error
    await submissions.close()


async def test_stop_and_another_target_cancel_the_post_and_report_nothing() -> None:
    submissions, posts, done = harness()
    submissions.start("k", T1, lambda: posts.post("k"))
    await settle()
    submissions.start("k", T2, lambda: posts.post("k"))  # the cluster changed
    await settle()
    assert posts.in_flight["k"] == 1 and submissions.running("k", T2)
    submissions.stop("k")
    await settle()
    assert posts.in_flight["k"] == 0 and done == [] and len(submissions) == 0
    await submissions.close()


async def test_an_outcome_for_another_target_is_dropped() -> None:
    submissions, posts, _ = harness()
    submissions.start("k", T1, lambda: posts.post("k"))
    await settle()
    posts.end("k")
    await settle()
    assert submissions.take("k", T2) is None and len(submissions) == 0
    await submissions.close()


async def test_a_key_no_longer_wanted_reports_nothing() -> None:
    wanted = True
    submissions = JobSubmissions(still_wanted=lambda key, target: wanted)
    done: list[Hashable] = []
    submissions.on_done = done.append
    posts = Posts()
    submissions.start("k", T1, lambda: posts.post("k"))
    await settle()
    wanted = False
    posts.end("k")
    await settle()
    assert done == [] and len(submissions) == 0
    await submissions.close()


async def test_close_cancels_every_post() -> None:
    submissions, posts, done = harness()
    for key in range(4):
        submissions.start(key, T1, lambda k=key: posts.post(k))  # type: ignore[misc]
    await settle()
    await submissions.close()
    await settle()
    assert all(n == 0 for n in posts.in_flight.values()) and done == []


KEYS = ["a", "b", "c"]
op = st.one_of(
    st.tuples(st.just("start"), st.sampled_from(KEYS), st.sampled_from([T1, T2])),
    st.tuples(st.just("take"), st.sampled_from(KEYS), st.sampled_from([T1, T2])),
    st.tuples(st.just("stop"), st.sampled_from(KEYS), st.none()),
    st.tuples(st.just("ok"), st.sampled_from(KEYS), st.none()),
    st.tuples(st.just("fail"), st.sampled_from(KEYS), st.none()),
    st.tuples(st.just("unwant"), st.sampled_from(KEYS), st.none()),
    st.tuples(st.just("yield"), st.none(), st.none()),
)


async def schedule(ops: list[tuple[str, str | None, PollTarget | None]]) -> None:
    unwanted: set[Hashable] = set()
    submissions = JobSubmissions(still_wanted=lambda key, target: key not in unwanted)
    reported: list[Hashable] = []
    submissions.on_done = reported.append
    posts = Posts()
    started: dict[Hashable, PollTarget] = {}
    takeable: dict[Hashable, PollTarget] = {}  # reported, not yet taken, stopped or replaced
    for name, key, target in ops:
        if name == "start":
            assert key is not None and target is not None
            if not submissions.running(key, target):
                takeable.pop(key, None)
            submissions.start(key, target, lambda k=key: posts.post(k))  # type: ignore[misc]
            started[key] = target
        elif name == "take":
            assert key is not None and target is not None
            finished = submissions.take(key, target)
            expected = takeable.pop(key, None)
            if expected is None:
                assert finished is None
            else:
                assert (finished is not None) == (expected == target)
        elif name == "stop":
            submissions.stop(key)
            started.pop(key, None)
            takeable.pop(key, None)
        elif name in ("ok", "fail"):
            posts.end(key, None if name == "ok" else DashboardUnavailable("x"))
        elif name == "unwant":
            unwanted.add(key)
        for _ in range(3):
            await asyncio.sleep(0)
        assert posts.overlaps == 0  # never two POSTs of one key at once
        while reported:
            done = reported.pop(0)
            assert done in started and done not in unwanted
            takeable[done] = started[done]
    await submissions.close()
    await settle()
    assert all(n == 0 for n in posts.in_flight.values())


@settings(max_examples=200, deadline=None)
@given(st.lists(op, max_size=40))
def test_schedules_keep_one_post_per_key_and_report_each_outcome_once(
    ops: list[tuple[str, str | None, PollTarget | None]],
) -> None:
    asyncio.run(schedule(ops))
