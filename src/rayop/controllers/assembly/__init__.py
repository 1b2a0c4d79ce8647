"""Assembling the operator: every controller described once, and one function that builds them.

- ``operator_settings``: :class:`OperatorSettings`, what ``rayop run`` configures (KubeRay's flags).
- ``blueprint``: :class:`ControllerBlueprint` (one controller, described once), the typed
  :class:`Wiring` it builds from and the :class:`Wired` it returns.
- ``catalog``: every blueprint, in KubeRay's registration order.
- ``build``: :func:`build_operator`, the one assembly path (``rayop run``, ``rayop up``,
  ``rayop bench``, ``rayop.testing.open_operator``).
- ``run``: :func:`run_operator`, the operator until a signal, and the operator's client.
- ``kuberay_metrics``: KubeRay's nine ``kuberay_*`` metrics, registered only with
  ``--enable-metrics``.
- ``sharding``: ``--sharding`` wired for Ray: the roots, where their objects live, how a request
  finds its root, and the membership and sharder runnables.
- ``shard_fence``: ``rayop run`` refuses to start beside replicas of the other sharding mode.
- ``decision_events``: ``--decision-events``: each pass that ended waiting told as a Normal
  Event about its object (``kubectl describe`` shows it).
- ``rbac_rules``: the RBAC rules the operator needs: the one source of deploy/rbac and the chart.
"""
