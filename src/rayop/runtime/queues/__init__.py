"""Work queues: deduplicating, per-key locked, delayed and rate-limited, as client-go's and
controller-runtime's.

- ``fifo``: the classic FIFO workqueue: deduplicating, never handing one item to two workers at once.
- ``delaying``: delayed adds for the classic workqueue, and the clock-driven timer the queues share.
- ``ratelimiting``: the classic rate-limiting workqueue: a delaying queue whose retries a limiter
  spaces out.
- ``priority``: controller-runtime's priority queue: one entry per key, served by priority, then by
  age.
- ``rate_limiters``: rate limiters that tell a workqueue how long to hold back a retried item.
- ``metrics_hooks``: the hooks a queue calls so that workqueue metrics can be computed outside it.
"""
