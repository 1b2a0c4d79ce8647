"""Rotated log files older than KubeRay's 30 days are deleted at open and at each rotation."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from rayop.runtime.process.log_rotation import DAY_SECONDS, AgedRotatingFileHandler

NOW = 1_800_000_000.0
"""A fixed wall-clock time (2027-01-15) that every handler here reads as now."""
MAX_AGE = 30 * DAY_SECONDS


def _backup(log: Path, n: int, *, age_days: float) -> Path:
    path = Path(f"{log}.{n}")
    path.write_text(f"backup {n}\n")
    mtime = NOW - age_days * DAY_SECONDS
    os.utime(path, (mtime, mtime))
    return path


def _record(text: str) -> logging.LogRecord:
    return logging.LogRecord("rayop.test", logging.INFO, __file__, 1, text, None, None)


def _handler(log: Path, *, max_age: float | None = MAX_AGE) -> AgedRotatingFileHandler:
    handler = AgedRotatingFileHandler(
        str(log), max_bytes=50, backups=10, max_age=max_age, clock=lambda: NOW
    )
    handler.setFormatter(logging.Formatter("%(message)s"))
    return handler


def test_opening_deletes_rotated_files_older_than_30_days(tmp_path: Path) -> None:
    log = tmp_path / "kuberay.log"
    young = _backup(log, 1, age_days=29.9)
    old = [_backup(log, 2, age_days=30.1), _backup(log, 3, age_days=400)]
    handler = _handler(log)
    try:
        assert young.exists()
        assert not any(path.exists() for path in old)
        assert handler.rotated_files() == [young]
    finally:
        handler.close()


def test_a_rotation_deletes_the_files_that_aged_past_30_days(tmp_path: Path) -> None:
    log = tmp_path / "kuberay.log"
    now = [NOW]
    handler = AgedRotatingFileHandler(
        str(log), max_bytes=50, backups=10, max_age=MAX_AGE, clock=lambda: now[0]
    )
    handler.setFormatter(logging.Formatter("%(message)s"))
    try:
        _backup(log, 1, age_days=10)
        _backup(log, 2, age_days=20)
        now[0] = NOW + 15 * DAY_SECONDS  # the 20-day-old one is now 35 days old
        handler.emit(_record("a" * 40))
        handler.emit(_record("b" * 40))  # over 50 bytes: rotates first
        kept = handler.rotated_files()
        assert [p.name for p in kept] == ["kuberay.log.1", "kuberay.log.2"]
        assert kept[0].read_text() == "a" * 40 + "\n"  # the file just rotated out,
        assert kept[0].stat().st_mtime == now[0]  # stamped with the rotation time
        assert kept[1].read_text() == "backup 1\n"  # 25 days old: kept
        assert log.read_text() == "b" * 40 + "\n"
    finally:
        handler.close()


def test_without_a_max_age_old_rotated_files_stay(tmp_path: Path) -> None:
    log = tmp_path / "kuberay.log"
    _backup(log, 1, age_days=400)
    handler = _handler(log, max_age=None)
    try:
        handler.emit(_record("a" * 40))
        handler.emit(_record("b" * 40))
        assert [p.name for p in handler.rotated_files()] == ["kuberay.log.1", "kuberay.log.2"]
        assert Path(f"{log}.2").read_text() == "backup 1\n"
    finally:
        handler.close()


def test_the_backup_count_still_bounds_the_rotated_files(tmp_path: Path) -> None:
    log = tmp_path / "kuberay.log"
    handler = _handler(log)
    try:
        for i in range(15):
            handler.emit(_record(str(i) * 60))
        assert len(handler.rotated_files()) == 10
    finally:
        handler.close()
