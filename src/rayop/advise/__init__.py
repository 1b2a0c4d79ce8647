"""``rayop advise``: the concurrency decision, made from a running operator's own metrics.

Modules:

- ``advice``: one window's advice: which operator, what its API client showed, a verdict per
  controller.
- ``compare``: before and after a change: did it help? A keep-or-revert verdict over two
  windows.
- ``endpoint``: reads an operator's ``/metrics`` endpoint over a window: a scrape every interval.
- ``errors``: the error ``rayop advise`` reports for input it cannot use (exit status 2, nothing
  guessed).
- ``evidence``: what one window of scrapes says about each controller and about the API client.
- ``exposition``: reads a Prometheus text exposition: snapshots of every sample, and histogram
  quantiles.
- ``format``: how advice writes a duration in a sentence.
- ``grafana_dashboard``: a Grafana dashboard of the verdict's inputs side by side, on the recorded
  series of the rules.
- ``identity``: which operator a set of metrics comes from: rayop, KubeRay, or neither.
- ``offered_load``: the load a before/after comparison holds fixed: the work the users offered,
  read from a window.
- ``prometheus``: reads an operator's series from a Prometheus server's HTTP API over a time
  range.
- ``prometheus_rules``: the verdict's two headline cases as Prometheus recording and alerting
  rules.
- ``report``: writes advice for a terminal: what was read, then each controller's verdict and its
  evidence.
- ``window_file``: a recorded window on disk (``rayop advise --save``), to compare a later window
  against.
- ``verdict``: turns one window's evidence into a verdict per controller: raise, keep, lower, or
  cannot tell.
"""
