"""Controller machinery with no knowledge of any particular operator: queues, rate limiters,
the controller loop, informers, expectations, leader election, metrics and the manager.

Nothing here names an API group, label or resource of one operator (a test checks it); the
operator's own settings, such as its cache filters, live with its controllers.

Modules and subpackages:

- ``admission_server``: a validating admission webhook server: AdmissionReview v1 over HTTPS, as
  controller-runtime.
- ``backoff``: jittered exponential backoff between reflector list/watch attempts.
- ``clock``: time as an injected dependency for the controller machinery.
- ``collector``: tunes CPython's cyclic garbage collector for a long-running operator process.
- ``compact_store``: compact encoding of cached objects: orjson bytes deflated against learned
  dictionaries.
- ``concurrency_auto``: runs a controller's adaptive concurrency: every few seconds, its metrics
  into the law.
- ``concurrency_law``: decides a controller's worker limit from its own signals: AIMD on a latency
  gradient.
- ``controller``: the controller loop: N workers taking requests off a workqueue and reconciling
  them.
- ``endpoints``: the manager's HTTP endpoints: ``/metrics`` and the ``/healthz`` / ``/readyz``
  probes.
- ``events``: records ``events.k8s.io/v1`` Events about objects, as client-go's ``tools/events``
  does.
- ``events_metrics``: counts the Events the recorder was asked for, and every one it did not write
  on its own.
- ``events_series``: folds isomorphic Events into series, as client-go's ``tools/events``
  broadcaster does.
- ``events_writer``: sends Event writes in the background, retrying as client-go's ``tools/events``
  does.
- ``expectations``: scale expectations: pod creations and deletions a controller waits to see in its
  cache.
- ``frozen``: read-only views of decoded JSON objects, as handed out by informer caches.
- ``heap_trim``: returns the C heap's free pages to the operating system now and then, as Go's
  scavenger does.
- ``indexer``: the informer cache: objects keyed ``namespace/name`` with named secondary indexes.
- ``informer``: a shared informer: one list+watch of a resource feeding a cache and any number of
  handlers.
- ``informer_factory``: shares informers: one per (resource, namespace, label selector) in a
  process.
- ``informer_source``: controller sources fed by shared informers: ``for_`` (the object itself) and
  ``owns``.
- ``labelselector``: Kubernetes label selectors: parsing the string form and matching labels against
  it.
- ``leaderelection``: leader election on a ``coordination.k8s.io/v1`` Lease.
- ``logsetup``: configures the operator's logs: structured JSON lines or a readable console format.
- ``manager``: the manager: runs several controllers in one process on one client and one shared
  cache.
- ``metrics``: the operator's Prometheus metrics: controller-runtime, workqueue, leader election,
  process.
- ``own_writes``: remembers a controller's own writes until its informer cache has seen them.
- ``predicate``: event filters for sources, with controller-runtime's semantics.
- ``ratelimit``: rate limiters that tell a workqueue how long to hold back a retried item.
- ``reconcile``: the reconcile contract: requests, results, errors, and what the controller does
  with them.
- ``reflector``: the reflector: keeps a store in step with the API server by list and watch.
- ``serving_cert``: a self-managed serving certificate for the admission webhook server (openssl
  CLI).
- ``source``: what feeds a controller: sources of reconcile requests.
- ``steps``: a reconcile pass as an ordered list of steps, and the one way a step ends a pass early.
- ``supervisor``: one owner for a component's background tasks: an ``asyncio.TaskGroup`` in a host
  task.
- ``timeouts``: timeouts measured on an injected :class:`~rayop.runtime.clock.Clock` rather than
  loop time.
- ``worker_gate``: lets at most ``limit`` of a controller's workers take work, a limit that can
  change at runtime.
- ``workqueue``: the classic FIFO workqueue: deduplicating, never handing one item to two workers at
  once.
- ``workqueue_delaying``: delayed adds for the classic workqueue, and the clock-driven timer the
  queues share.
- ``workqueue_metrics``: the hooks a queue calls so that workqueue metrics can be computed outside
  it.
- ``workqueue_priority``: controller-runtime's priority queue: one entry per key, served by
  priority, then by age.
- ``workqueue_ratelimiting``: the classic rate-limiting workqueue: a delaying queue whose retries a
  limiter spaces out.
"""
