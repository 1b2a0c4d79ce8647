"""rayop's cron schedules against robfig/cron v3.0.1 itself (the library KubeRay v1.7 uses).

A small Go program (built here from the Go module proxy, as KubeRay's go.mod pins the module)
parses each schedule with ``cron.ParseStandard`` and prints its next ticks or its error; the
same lines must come out of :mod:`rayop.api.cron`. The schedules are random combinations of
every syntax form in zones with daylight-saving changes (north and south, 30-minute shifts),
started around the changes. Skipped only when Go is not installed.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rayop.api.cron import CronError, parse

GO = shutil.which("go")
pytestmark = pytest.mark.skipif(GO is None, reason="needs the Go toolchain")

PROGRAM = """package main

import (
\t"bufio"
\t"fmt"
\t"os"
\t"strings"
\t"time"

\t"github.com/robfig/cron/v3"
)

func main() {
\tsc := bufio.NewScanner(os.Stdin)
\tfor sc.Scan() {
\t\tparts := strings.Split(sc.Text(), "\\t")
\t\ts, err := cron.ParseStandard(parts[0])
\t\tif err != nil {
\t\t\tfmt.Println("ERR " + err.Error())
\t\t\tcontinue
\t\t}
\t\tt, _ := time.Parse(time.RFC3339, parts[1])
\t\tout := []string{}
\t\tfor i := 0; i < 6; i++ {
\t\t\tt = s.Next(t)
\t\t\tif t.IsZero() {
\t\t\t\tout = append(out, "none")
\t\t\t\tbreak
\t\t\t}
\t\t\tout = append(out, t.UTC().Format(time.RFC3339))
\t\t}
\t\tfmt.Println(strings.Join(out, " "))
\t}
}
"""
GO_MOD = "module crondiff\n\ngo 1.22\n\nrequire github.com/robfig/cron/v3 v3.0.1\n"
ZONES = ("America/New_York", "Europe/London", "Australia/Lord_Howe", "America/Santiago",
         "Asia/Taipei", "Pacific/Chatham", "Europe/Berlin", "America/Sao_Paulo")  # fmt: skip
FIELDS = (
    ("*", "0", "30", "*/15", "5-10", "0,30", "?", "1/20", "*/1", "59"),
    ("*", "0", "1", "2", "*/3", "1-3", "23", "0,12", "?"),
    ("*", "1", "13", "31", "?", "*/2", "15-20", "29", "30"),
    ("*", "1", "3", "10", "11", "*/2", "jan", "mar-may", "OCT"),
    ("*", "0", "sun", "FRI", "1-5", "?", "*/2", "6", "0,6"),
)
FIXED = ("@yearly", "@monthly", "@weekly", "@daily", "@hourly", "@every 90s", "@every 1h30m",
         "@every 500ms", "@every 1d", "@every -5s", "@every 1.5s", "@every .5m", "@every 1.h",
         "TZ=America/New_York @daily", "* * * *", "61 * * * *", "a * * * *", "*/-1 * * * *",
         "1-2-3 * * * *", "x/2 * * * *", "1/2/3 * * * *", "@every 1", "TZ=Foo/Bar * * * *",
         "@bogus", "* * * * * *", "0 0 0 * *", ", * * * *", "0 0 31 2 *")  # fmt: skip
STARTS = (datetime(2026, 3, 8, 5, 30), datetime(2026, 10, 31, 23), datetime(2026, 3, 28, 23),
          datetime(2026, 4, 4, 12), datetime(2026, 9, 26, 10), datetime(2026, 2, 27, 12))  # fmt: skip


@pytest.fixture(scope="module")
def robfig(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Go program, built once."""
    assert GO is not None
    work = tmp_path_factory.mktemp("crondiff")
    (work / "main.go").write_text(PROGRAM)
    (work / "go.mod").write_text(GO_MOD)
    env = {**os.environ, "GOFLAGS": "-mod=mod"}
    build = subprocess.run(
        [GO, "build", "-o", "crondiff", "."], cwd=work, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    return work / "crondiff"


def _cases(count: int) -> list[tuple[str, datetime]]:
    rng = random.Random(15)
    specs = [" ".join(rng.choice(f) for f in FIELDS) for _ in range(count)]
    specs = [f"TZ={rng.choice(ZONES)} {s}" if rng.random() < 0.8 else s for s in specs]
    return [
        (spec, rng.choice(STARTS).replace(tzinfo=UTC) + timedelta(minutes=rng.randint(0, 3000)))
        for spec in (*specs, *FIXED)
    ]


def _ours(spec: str, start: datetime) -> str:
    try:
        schedule = parse(spec)
    except CronError as err:
        return f"ERR {err}"
    out, moment = [], start
    for _ in range(6):
        found = schedule.next(moment)
        if found is None:
            out.append("none")
            break
        out.append(found.strftime("%Y-%m-%dT%H:%M:%SZ"))
        moment = found
    return " ".join(out)


def test_ticks_and_errors_equal_robfigs(robfig: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    cases = _cases(1500)
    lines = "".join(f"{spec}\t{start.strftime('%Y-%m-%dT%H:%M:%SZ')}\n" for spec, start in cases)
    run = subprocess.run(
        [str(robfig)], input=lines, capture_output=True, text=True, timeout=120,
        env={**os.environ, "TZ": "UTC"},
    )  # fmt: skip
    theirs = run.stdout.splitlines()
    assert len(theirs) == len(cases)
    different = [
        f"{spec} from {start:%Y-%m-%dT%H:%M}Z:\n  robfig {go}\n  rayop  {mine}"
        for (spec, start), go in zip(cases, theirs, strict=True)
        if (mine := _ours(spec, start)) != go
    ]
    assert different == []
    assert sum(line.startswith("ERR") for line in theirs) >= 10  # errors were compared too
