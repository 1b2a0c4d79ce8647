"""The account of each object's last passes (``rayop.runtime.decisions``).

The log's bounds (passes per object, objects), notes outside a pass and after it, how a
controller closes each pass with its outcome and next look, the waits the own-writes tracker and
the scale expectations note, the writes a client's hook notes, and the JSON the metrics server
serves at ``/debug/decisions``.
"""

from __future__ import annotations

import tracemalloc
from datetime import timedelta

import aiohttp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rayop.runtime.controller import Controller, Request, Result, RetryAfter, TerminalError
from rayop.runtime.decision_records import ACTED, EVENTED, quiet_alike, repeated, set_aside
from rayop.runtime.decision_records import pack as pack_record
from rayop.runtime.decision_records import unpack as unpack_record
from rayop.runtime.decisions import (
    MAX_NOTES,
    DecisionLog,
    PassAccount,
    current_account,
    note_client_write,
    note_event,
    note_wait,
    note_write,
    wait_summary,
)
from rayop.runtime.expectations import CREATE, ScaleExpectations
from rayop.runtime.own_writes import OwnWrites
from rayop.runtime.serving.endpoints import HttpServer, metrics_app
from rayop.runtime.source import Enqueue
from rayop.testing import FakeClock, eventually
from rayop.testing.clock import WALL_START

T0 = 1000.0
"""A pass's start on the fake clock (monotonic seconds)."""


def _account(name: str = "a", controller: str = "c") -> PassAccount:
    return PassAccount(controller, "Thing", "ns", name, T0)


def _record(log: DecisionLog, account: PassAccount) -> None:
    log.close(account, log.open(account))


def test_notes_outside_a_pass_go_nowhere_and_inside_one_land_in_its_account() -> None:
    note_wait("nobody listens")
    assert current_account() is None
    log = DecisionLog()
    account = _account()
    token = log.open(account)
    note_wait("w")
    note_write("x")
    note_event("e")
    log.close(account, token)
    note_write("after the pass")  # e.g. a task the pass started, still running
    assert current_account() is None
    assert account.all_notes() == [("wait", "w"), ("write", "x"), ("event", "e")]
    assert current_account() is None
    (served,) = log.explain("ns", "a")
    assert (served["waited"], served["wrote"], served["events"]) == (["w"], ["x"], ["e"])


def test_a_listener_gets_each_pass_that_waited_with_its_one_line() -> None:
    log = DecisionLog()
    heard: list[str | None] = []
    log.report_waits(lambda account: heard.append(wait_summary(account)))
    quiet, wrote = _account("quiet"), _account("wrote")
    _record(log, quiet)
    token = log.open(wrote)
    note_write("POST pods: ok")
    log.close(wrote, token)
    assert heard == [] and wait_summary(wrote) is None
    waited = _account("waited")
    token = log.open(waited)
    note_wait("own write not yet seen")
    note_wait("dashboard not answering")
    waited.settle(Result(requeue_after=2.0), None, 0.01)
    log.close(waited, token)
    assert heard == [
        "waiting: own write not yet seen (and 1 more); next look: again in 2 s (timed requeue),"
        " or on the next change"
    ]


def test_a_failing_wait_listener_is_logged_and_the_pass_still_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = DecisionLog()

    def fail(_account: PassAccount) -> None:
        raise RuntimeError("boom")

    log.report_waits(fail)
    account = _account()
    token = log.open(account)
    note_wait("w")
    log.close(account, token)
    assert "listener of waiting passes failed" in caplog.text
    assert [p["waited"] for p in log.explain("ns", "a")] == [["w"]]


def test_a_pass_keeps_at_most_max_notes_and_counts_the_rest() -> None:
    account = _account()
    for i in range(MAX_NOTES + 3):
        account.note("write", str(i))
    assert account.notes is not None
    assert len(account.notes) == MAX_NOTES and account.dropped == 3
    assert account.as_json(lambda _t: WALL_START)["notesDropped"] == 3


def test_the_log_keeps_the_last_passes_of_each_object_and_drops_the_least_recent_object() -> None:
    log = DecisionLog(per_object=2, acted=0, max_objects=2)
    for i in range(3):
        account = _account("a")
        account.seconds = float(i)
        account.note("write", "PUT status")
        _record(log, account)
    _record(log, _account("b"))
    assert [p.seconds for p in log.passes("ns", "a")] == [1.0, 2.0]
    _record(log, _account("a"))  # a is now the most recent
    _record(log, _account("c"))  # b goes
    assert len(log) == 2
    assert list(log.passes("ns", "b")) == []
    assert len(list(log.passes("ns", "a"))) == 2 and len(list(log.passes("ns", "c"))) == 1


def test_passes_are_told_apart_by_kind() -> None:
    log = DecisionLog()
    _record(log, PassAccount("x-controller", "RayCluster", "ns", "same", T0))
    _record(log, PassAccount("y-controller", "RayJob", "ns", "same", T0))
    assert [p["controller"] for p in log.explain("ns", "same", "raycluster")] == ["x-controller"]
    assert len(log.explain("ns", "same")) == 2


def test_a_bad_bound_is_refused() -> None:
    with pytest.raises(ValueError):
        DecisionLog(per_object=0)


def test_a_client_write_hook_names_a_created_object_and_an_error() -> None:
    log = DecisionLog()
    account = _account()
    token = log.open(account)
    note_client_write("POST", "/api/v1/namespaces/ns/pods", {"metadata": {"name": "p-x1"}}, "")
    note_client_write("DELETE", "/api/v1/namespaces/ns/pods/q", None, "404 not found")
    log.close(account, token)
    assert [t for _, t in account.all_notes()] == [
        "POST /api/v1/namespaces/ns/pods/p-x1: ok",
        "DELETE /api/v1/namespaces/ns/pods/q: 404 not found",
    ]


def test_the_own_writes_tracker_and_the_expectations_note_what_a_pass_waits_for() -> None:
    clock = FakeClock()
    own = OwnWrites(clock=clock)
    own.record({"metadata": {"namespace": "ns", "name": "a", "resourceVersion": "7"}})
    expectations = ScaleExpectations(lambda _ns, _name: None, clock=clock)
    expectations.expect_scale_pod("ns", "a", "workers", "a-workers-x", CREATE)
    log = DecisionLog()
    account = _account()
    token = log.open(account)
    assert own.cache_behind({"metadata": {"namespace": "ns", "name": "a", "resourceVersion": "6"}})
    assert not expectations.is_satisfied("ns", "a", "workers")
    log.close(account, token)
    waited = log.explain("ns", "a")[0]["waited"]
    assert "own write not yet seen" in waited[0] and "6" in waited[0] and "7" in waited[0]
    assert "group 'workers'" in waited[1] and "create of pod a-workers-x" in waited[1]


class _NoSource:
    def start(self, enqueue: Enqueue) -> None:
        pass

    def has_synced(self) -> bool:
        return True


async def test_a_controller_closes_each_pass_with_its_outcome_and_next_look() -> None:
    log = DecisionLog()
    outcomes: dict[str, Result | Exception] = {
        "done": Result(),
        "later": Result(requeue_after=30.0),
        "retry": RetryAfter(4.0, "the dashboard is starting"),
        "terminal": TerminalError("cannot be fixed"),
        "error": RuntimeError("boom"),
    }

    async def reconcile(request: Request) -> Result:
        note_wait(f"looked at {request.name}")
        outcome = outcomes[request.name]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    controller = Controller("things", reconcile, sources=[_NoSource()], decisions=log, kind="Thing")
    await controller.start()
    for name in outcomes:
        controller.enqueue(Request("ns", name))

    async def all_seen() -> bool:
        return all(list(log.passes("ns", name)) for name in outcomes)

    await eventually(all_seen, timeout=5, what="a pass of each object")
    await controller.stop(graceful=False)
    served = {name: log.explain("ns", name, "Thing")[0] for name in outcomes}
    assert {name: p["outcome"] for name, p in served.items()} == {
        "done": "done",
        "later": "requeue_after",
        "retry": "retry_after",
        "terminal": "terminal",
        "error": "error",
    }
    assert served["later"]["nextIn"] == 30.0 and served["retry"]["nextIn"] == 4.0
    assert served["done"]["nextIn"] is None and served["error"]["retries"] >= 1
    assert served["error"]["error"] == "boom"
    assert served["done"]["waited"] == ["looked at done"]
    assert all(p["controller"] == "things" and p["kind"] == "Thing" for p in served.values())


async def test_the_metrics_server_serves_an_objects_passes_as_json() -> None:
    log = DecisionLog()
    account = _account("served")
    token = log.open(account)
    note_write("PUT x")
    log.close(account, token)
    server = HttpServer(metrics_app(lambda: b"", log.explain), "127.0.0.1", 0)
    await server.start()
    try:
        base = f"http://127.0.0.1:{server.port}/debug/decisions"
        async with aiohttp.ClientSession() as session:
            async with session.get(base, params={"namespace": "ns", "name": "served"}) as r:
                body = await r.json()
            async with session.get(base) as missing:
                assert missing.status == 400
    finally:
        await server.stop()
    (served,) = body["passes"]
    assert served["name"] == "served" and served["wrote"] == ["PUT x"]


async def test_without_a_log_the_metrics_server_has_no_decisions_route() -> None:
    server = HttpServer(metrics_app(lambda: b""), "127.0.0.1", 0)
    await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            url = f"http://127.0.0.1:{server.port}/debug/decisions?name=x"
            async with session.get(url) as r:
                assert r.status == 404
    finally:
        await server.stop()


def test_quiet_passes_that_end_alike_fold_into_one() -> None:
    log = DecisionLog(per_object=2, acted=0, clock=FakeClock(T0))
    acted = _account()
    acted.note("write", "POST pods")
    _record(log, acted)
    for minute in range(5):
        quiet = _account()
        quiet.outcome, quiet.next_in = "requeue_after", 300.0
        quiet.started = T0 + 60 * minute
        _record(log, quiet)
    kept = log.explain("ns", "a")
    assert [p["wrote"] for p in kept] == [["POST pods"], []]
    assert kept[1]["repeated"] == 4
    at_t0 = WALL_START + timedelta(seconds=T0)  # the fake clock's wall time at T0
    assert kept[1]["started"] == at_t0.isoformat(timespec="milliseconds")
    assert kept[1]["lastStarted"] == (at_t0 + timedelta(minutes=4)).isoformat(
        timespec="milliseconds"
    )
    other = _account()
    other.outcome = "done"
    _record(log, other)  # ends otherwise: kept on its own, the oldest goes
    assert [p["outcome"] for p in log.explain("ns", "a")] == ["requeue_after", "done"]


def test_the_passes_that_recorded_an_event_outlast_a_burst_of_status_writes() -> None:
    log = DecisionLog(per_object=2, acted=1)
    created = _account()
    created.note("write", "POST pods")
    created.note("event", "Normal CreatedHeadPod: Created head Pod")
    _record(log, created)
    for i in range(5):
        status = _account()
        status.note("write", f"PUT status {i}")
        _record(log, status)
    kept = log.explain("ns", "a")
    assert [p["wrote"] for p in kept] == [["POST pods"], ["PUT status 3"], ["PUT status 4"]]


def _creating_pass(i: int) -> PassAccount:
    """A pass that created a cluster's pods and service, as the log sees one."""
    account = _account(f"cluster-{i}")
    for pod in ("head-x7k2p", "worker-a1b2c", "worker-d3e4f", "worker-g5h6i"):
        account.note("write", f"POST /api/v1/namespaces/team-{i % 9}/pods/cluster-{i}-{pod}: ok")
        account.note("event", f"Normal Created: Created pod team-{i % 9}/cluster-{i}-{pod}")
    account.note("write", f"POST /api/v1/namespaces/team-{i % 9}/services/cluster-{i}-head-svc: ok")
    return account


def test_kept_notes_are_packed_and_read_back_unchanged() -> None:
    # A log keeps thousands of passes; kept as strings in tuples, such a pass costs about
    # 2.1 KB. Packed, it must cost a fraction of that and read back the same.
    passes = 2000
    expected = [_creating_pass(i).all_notes() for i in range(passes)]
    log = DecisionLog(max_objects=passes)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(passes):
            _record(log, _creating_pass(i))
        per_pass = (tracemalloc.get_traced_memory()[0] - before) / passes
    finally:
        tracemalloc.stop()
    assert per_pass < 900, per_pass
    for i in (0, 999, passes - 1):
        (kept,) = log.passes("ns", f"cluster-{i}")
        assert kept.all_notes() == expected[i]
        events = [text for kind, text in expected[i] if kind == "event"]
        assert log.explain("ns", f"cluster-{i}")[0]["events"] == events


def test_a_quiet_pass_costs_a_fraction_of_a_kilobyte_kept() -> None:
    # A log at its bound holds one pass of each of thousands of objects, most of them quiet (a
    # periodic look that found nothing to do): as Python objects each cost about 0.75 KB.
    objects = 2000
    log = DecisionLog(max_objects=objects)
    names = [f"raycluster-{i:05d}" for i in range(objects)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for name in names:
            account = PassAccount("raycluster-controller", "RayCluster", "team-a", name, T0)
            account.seconds, account.outcome, account.next_in = 0.002, "requeue_after", 300.0
            _record(log, account)
        per_object = (tracemalloc.get_traced_memory()[0] - before) / objects
    finally:
        tracemalloc.stop()
    assert per_object < 350, per_object
    (kept,) = log.explain("team-a", names[7])
    assert (kept["outcome"], kept["nextIn"], kept["seconds"]) == ("requeue_after", 300.0, 0.002)


_PASS = st.tuples(
    st.sampled_from(["a", "b", "c"]),  # the object
    st.sampled_from(["x", "y"]),  # the controller
    st.lists(st.sampled_from(["wait", "write", "event"]), max_size=3),  # its notes' kinds
    st.sampled_from(["done", "requeue_after", "error"]),
    st.sampled_from([None, 30.0]),  # next_in
    st.booleans(),  # ends with an error's text
    st.integers(min_value=0, max_value=3),  # retries
)


@settings(max_examples=200, deadline=None)
@given(
    passes=st.lists(_PASS, max_size=40),
    per_object=st.integers(min_value=1, max_value=3),
    acted=st.integers(min_value=0, max_value=2),
    max_objects=st.integers(min_value=1, max_value=4),
)
def test_the_records_keep_what_the_accounts_would_have_kept(
    passes: list[tuple[str, str, list[str], str, float | None, bool, int]],
    per_object: int,
    acted: int,
    max_objects: int,
) -> None:
    # The model keeps the accounts themselves, as the log did before it kept records.
    log = DecisionLog(per_object=per_object, acted=acted, max_objects=max_objects)
    model: dict[tuple[str, str], tuple[list[dict[str, object]], list[dict[str, object]]]] = {}
    for step, (name, controller, kinds, outcome, next_in, failed, retries) in enumerate(passes):
        account = PassAccount(controller, "Thing", "ns", name, T0 + step)
        for i, kind in enumerate(kinds):
            account.note(kind, f"{kind} {i} of {step}")  # type: ignore[arg-type]
        account.outcome, account.next_in, account.retries = outcome, next_in, retries  # type: ignore[assignment]
        account.seconds = step / 7
        account.error = f"failed at {step}" if failed else ""
        seen = {
            "started": T0 + step, "repeats": 0, "last": T0 + step, "notes": account.all_notes(),
            "outcome": outcome, "next_in": next_in, "error": account.error,
            "retries": retries, "seconds": step / 7, "evented": "event" in kinds,
        }  # fmt: skip
        _record(log, account)
        key = (controller, name)
        if key not in model:
            model[key] = ([seen], [])
            if len(model) > max_objects:
                del model[next(iter(model))]
            continue
        model[key] = model.pop(key)
        last, set_apart = model[key]
        previous = last[-1]
        quiet = not seen["notes"] and not seen["error"]
        if quiet and not previous["notes"] and not previous["error"] and (
            (previous["outcome"], previous["next_in"]) == (outcome, next_in)
        ):
            previous["repeats"] = int(previous["repeats"]) + 1  # type: ignore[call-overload]
            previous["last"] = seen["started"]
            continue
        last.append(seen)
        if len(last) > per_object:
            leaving = last.pop(0)
            if acted and leaving["evented"]:
                set_apart.append(leaving)
                if len(set_apart) > acted:
                    del set_apart[0]
    assert len(log) == len(model)
    for (controller, name), (last, set_apart) in model.items():
        kept = [p for p in log.passes("ns", name) if p.controller == controller]
        assert [
            {
                "started": p.started, "repeats": p.repeats, "last": p.last_started,
                "notes": p.all_notes(), "outcome": p.outcome, "next_in": p.next_in,
                "error": p.error, "retries": p.retries, "seconds": p.seconds,
                "evented": p.evented,
            }
            for p in kept
        ] == [*set_apart, *last]  # fmt: skip


def test_a_record_reads_back_every_field_and_repeats_in_place() -> None:
    fields = {
        "started": 12.5, "last_started": 12.5, "seconds": 0.25, "next_in": None, "retries": 3,
        "repeats": 0, "dropped": 2, "outcome": "retry_after", "flags": EVENTED,
        "error": "conflict: ü", "notes": b"\x01packed",
    }  # fmt: skip
    record = pack_record(**fields)  # type: ignore[arg-type]
    assert unpack_record(record)._asdict() == fields
    quiet = pack_record(**{**fields, "error": "", "notes": None, "next_in": 30.0})  # type: ignore[arg-type]
    assert quiet_alike(quiet, "retry_after", 30.0)
    assert not quiet_alike(quiet, "retry_after", None) and not quiet_alike(quiet, "done", 30.0)
    assert not quiet_alike(record, "retry_after", None)  # it noted something and failed
    again = unpack_record(repeated(repeated(quiet, 14.0), 15.0))
    assert (again.repeats, again.last_started, again.started) == (2, 15.0, 12.5)
    aside = unpack_record(set_aside(record))
    assert aside.flags == EVENTED | ACTED and aside._replace(flags=EVENTED) == unpack_record(record)
