"""The pass record: one JSON line per pass, read back, and the cross-replica overlap check."""

from __future__ import annotations

from pathlib import Path

from rayop.runtime.sharding.pass_record import Pass, PassRecord, overlaps, read_passes


def test_passes_round_trip_and_a_torn_line_is_skipped(tmp_path: Path) -> None:
    record = PassRecord(tmp_path / "r0.jsonl")
    record.write(Pass("r0", "raycluster", "ns/a", 1.0, 2.0))
    record.close()
    record.write(Pass("r0", "raycluster", "ns/b", 3.0, 4.0))  # dropped after close
    with (tmp_path / "r0.jsonl").open("a", encoding="utf-8") as f:
        f.write('{"replica": "r0", "contr')
    assert list(read_passes([tmp_path / "r0.jsonl"])) == [Pass("r0", "raycluster", "ns/a", 1.0, 2.0)]


def test_overlaps_are_pairs_of_one_key_by_two_replicas_at_once() -> None:
    a = Pass("r0", "raycluster", "ns/a", 0.0, 5.0)
    same_replica = Pass("r0", "raycluster", "ns/a", 1.0, 2.0)
    other_key = Pass("r1", "raycluster", "ns/b", 1.0, 2.0)
    other_controller = Pass("r1", "rayjob", "ns/a", 1.0, 2.0)
    after = Pass("r1", "raycluster", "ns/a", 5.0, 6.0)
    assert overlaps([a, same_replica, other_key, other_controller, after]) == []
    inside = Pass("r1", "raycluster", "ns/a", 4.0, 4.5)
    assert overlaps([after, a, inside]) == [(a, inside)]
