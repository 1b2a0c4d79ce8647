"""Load scenarios that measure whether raising --reconcile-concurrency helps, and their reports.

Modules and subpackages:

- ``advise_check``: checks ``rayop advise`` against the bench: did the alternative it pointed to
  measure better?
- ``child_lifetime``: makes a child process end with its parent, whatever signal ends the parent.
- ``environment``: where a bench run happens: the API server (fresh embedded, or an existing
  cluster) and the operator under test (rayop in this process, or an external one read through its
  metrics URL).
- ``launched_operator``: an operator binary the bench starts itself for every run
  (``--operator-command``).
- ``latency_step``: slows the embedded API server down in the middle of a measured phase
  (``--api-latency-step``).
- ``metrics``: reads Prometheus series for the bench: snapshots, histogram quantiles and sampled
  gauges.
- ``outcomes``: the figures a concurrency verdict rests on: outcomes per value, run-to-run noise,
  lost events.
- ``readiness``: watches RayClusters (or RayJobs) and times how long each takes to become ready, as
  a user would see it.
- ``recommend``: turns measured runs into advice on ``--reconcile-concurrency``: outcomes first,
  then symptoms.
- ``report``: shows and saves bench results: live progress, the end table, JSON and an HTML page.
- ``report_workers``: plots workers, queue depth and API latency over time: the adaptive run beside
  the fixed runs.
- ``results``: the figures one bench run produces for one ``--concurrency`` value (and their JSON
  form).
- ``runner``: runs a scenario once per concurrency value and measures it (:func:`run_bench`).
- ``scenarios``: the bench's load scenarios, reproducible from a seed.
- ``symptoms``: explains a concurrency verdict by its symptoms and names what limits the operator
  next.
"""
