"""Events: recording ``events.k8s.io/v1`` Events as client-go's ``tools/events`` does.

- ``recorder``: :class:`EventRecorder` (never blocks, never raises) and the :class:`EventSink`
  protocol reconcilers record through.
- ``series``: folds isomorphic Events into series.
- ``writer``: sends Event writes in the background, retrying.
- ``metrics``: counts the Events asked for, and every one not written on its own.
"""
