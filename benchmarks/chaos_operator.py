"""The chaos campaign's operator process: ``rayop run`` in a child process that the campaign can
SIGKILL at any moment and start again at once (benchmarks/chaos.py; not a test).

Run as a script, it is the operator's entry point: ``python benchmarks/chaos_operator.py
[--broken NAME] run ...`` first applies the named deliberate breakage, then hands the rest of its
command line to rayop's CLI. The breakages exist only here, so that no user-facing operator flag
can switch a safety off; the campaign runs one to show that its invariant checker catches it:

- ``expectations-off``: the RayCluster controller's scale expectations always count as satisfied,
  so a pass that runs before the pod cache shows the pods the previous pass created creates them
  again (KubeRay's reason for expectations:
  https://github.com/ray-project/kuberay/blob/master/ray-operator/controllers/ray/expectations/scale_expectations.go).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["BROKEN", "OperatorProcess"]

BROKEN = ("expectations-off",)
"""The deliberate breakages ``--broken`` accepts."""


def _break(name: str) -> None:
    """Applies one deliberate breakage to this process's operator code."""
    if name == "expectations-off":
        from rayop.runtime.expectations import ScaleExpectations

        def always_satisfied(
            self: ScaleExpectations, namespace: str, cluster: str, group: str
        ) -> bool:
            return True

        ScaleExpectations.is_satisfied = always_satisfied  # type: ignore[method-assign]
        return
    raise SystemExit(f"unknown --broken {name!r}; known: {', '.join(BROKEN)}")


def _main(argv: list[str]) -> None:
    if argv[:1] == ["--broken"]:
        _break(argv[1])
        argv = argv[2:]
    from rayop.cli.commands import loaded_app
    from rayop.cli.flags import normalize_argv

    app = loaded_app()

    app(args=normalize_argv(argv), prog_name="rayop")


@dataclass
class OperatorProcess:
    """``rayop run`` as a child process: started, SIGKILLed and started again by the campaign.

    Args:
        kubeconfig: The operator's kubeconfig (its own ServiceAccount token).
        log_path: Every start appends its output here.
        broken: A deliberate breakage (one of :data:`BROKEN`), or None.
        extra_args: More ``rayop run`` flags.

    Attributes:
        starts: How many times it was started.
        kills: How many times the campaign SIGKILLed it.
        exits: Exit codes of the times it ended by itself (a lost Lease exits non-zero).
    """

    kubeconfig: Path
    log_path: Path
    lease_namespace: str
    broken: str | None = None
    extra_args: tuple[str, ...] = ()
    starts: int = 0
    kills: int = 0
    exits: list[int] = field(default_factory=list)
    _proc: asyncio.subprocess.Process | None = None
    _killed: asyncio.subprocess.Process | None = None
    started_at: float = 0.0

    def argv(self) -> list[str]:
        """The command line of one start."""
        broken = ["--broken", self.broken] if self.broken else []
        return [
            sys.executable, __file__, *broken, "run",
            f"--kubeconfig={self.kubeconfig}",
            "--use-kubernetes-proxy=true",
            "--metrics-addr=0",
            "--health-probe-bind-address=0",
            "--reconcile-concurrency=2",
            f"--leader-election-namespace={self.lease_namespace}",
            "--log-format=json",
            *self.extra_args,
        ]  # fmt: skip

    @property
    def running(self) -> bool:
        """Whether the child is alive (as far as this process has reaped it) and not killed."""
        return (
            self._proc is not None
            and self._proc.returncode is None
            and self._proc is not self._killed
        )

    async def start(self) -> None:
        """Starts a fresh operator process (no wait for readiness: it must resume by itself)."""
        assert not self.running, "the operator is already running"
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        with self.log_path.open("ab") as log:
            log.write(f"--- start {self.starts + 1} at {time.time():.3f}\n".encode())
            log.flush()
            self._proc = await asyncio.create_subprocess_exec(
                *self.argv(), stdout=log, stderr=asyncio.subprocess.STDOUT, env=env
            )
        self.starts += 1
        self.started_at = time.monotonic()

    def sigkill(self) -> bool:
        """SIGKILLs the operator now (synchronously: callable from a store callback); returns
        whether it was alive."""
        if not self.running:
            return False
        assert self._proc is not None
        try:
            os.kill(self._proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            return False
        self.kills += 1
        self._killed = self._proc
        return True

    async def reap(self) -> int | None:
        """Waits for the killed process to end; returns its exit code."""
        proc, self._killed = self._killed, None
        if proc is None:
            return None
        if proc is self._proc:
            self._proc = None
        return await proc.wait()

    async def exited_by_itself(self) -> int | None:
        """Returns the exit code if the process ended without being killed, else None."""
        proc = self._proc
        if proc is None or proc.returncode is None or proc is self._killed:
            return None
        code = proc.returncode
        self._proc = None
        self.exits.append(code)
        return code

    async def stop(self) -> None:
        """Ends the operator for good: SIGTERM, then SIGKILL after 10 s."""
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()


if __name__ == "__main__":
    _main(sys.argv[1:])
