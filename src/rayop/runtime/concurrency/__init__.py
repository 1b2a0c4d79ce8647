"""A controller's worker concurrency: fixed, or adaptive (``--reconcile-concurrency=auto``).

- ``waiters``: tasks blocked on one condition, woken one at a time or all at once (the workqueues
  and the worker gate).
- ``worker_gate``: lets at most ``limit`` of a controller's workers take work, a limit that can
  change at runtime.
- ``rules``: the signals behind every concurrency decision, and when each counts as present.
- ``law``: decides a controller's worker limit from its own signals: AIMD on a latency gradient.
- ``auto``: runs a controller's adaptive concurrency: every few seconds, its metrics into the law.
"""
