"""Controller machinery with no knowledge of any particular operator: queues, rate limiters,
the controller loop, informers, expectations, leader election, metrics and the manager.

Nothing here names an API group, label or resource of one operator (a test checks it); the
operator's own settings, such as its cache filters, live with its controllers.

Modules and subpackages:

- ``queues``: work queues: deduplicating, per-key locked, delayed, rate-limited, prioritised.
- ``informers``: informers, their caches and the sources they feed.
- ``events``: recording Events (the recorder, series, background writes, their metrics).
- ``concurrency``: a controller's worker concurrency, fixed or adaptive.
- ``serving``: what the process serves over HTTP: metrics, probes, admission webhooks.
- ``process``: the operator process itself: logging, the garbage collector, the C heap.
- ``controller``: the controller loop: N workers taking requests off a workqueue and reconciling
  them.
- ``reconcile``: the reconcile contract: requests, results, errors, and what the controller does
  with them.
- ``steps``: a reconcile pass as an ordered list of steps, and the one way a step ends a pass early.
- ``source``: what feeds a controller: sources of reconcile requests.
- ``predicate``: event filters for sources, with controller-runtime's semantics.
- ``expectations``: scale expectations: pod creations and deletions a controller waits to see in its
  cache.
- ``decisions``: an account of each object's last reconcile passes (what each waited for, wrote,
  asked for next), kept in memory.
- ``decision_records``: a closed pass as the decision log keeps it: one bytes record.
- ``own_writes``: remembers a controller's own writes until its informer cache has seen them.
- ``unchanged_passes``: a periodic pass that could only repeat an object's last, quiet one,
  answered without running; and the count of a pass's API requests.
- ``manager``: the manager: runs several controllers in one process on one client and one shared
  cache.
- ``leaderelection``: leader election on a ``coordination.k8s.io/v1`` Lease.
- ``sharding``: several active replicas sharing one fleet: membership, assignment, handover.
- ``metrics``: the operator's Prometheus metrics: controller-runtime, workqueue, leader election,
  process.
- ``supervisor``: one owner for a component's background tasks.
- ``background_work``: background work per key: at most one task per key, cancelled and awaited
  on demand.
- ``timeouts``: timeouts measured on an injected clock rather than loop time.
- ``clock``: time as an injected dependency for the controller machinery.
"""
