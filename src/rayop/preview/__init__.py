"""Knowing before applying: what the operator would create for a manifest (``rayop render``) and
what it would do to live objects (``rayop preview``), from the controllers' own code.

The operator runs as always (:func:`~rayop.controllers.assembly.build.build_operator`, the one
assembly path) on a client that records every write it makes and, for a preview, withholds them.

Modules and subpackages:

- ``capacity``: ``rayop preview -f``'s capacity check: can the nodes hold the pods a change would
  create?
- ``cron``: what a RayCronJob's next tick would create, for ``rayop preview``.
- ``edits``: ``rayop preview -f FILE``: the live objects as a file would change them, as the API
  server would store them.
- ``first_pass``: ``rayop preview``'s run: the operator's first pass over each live ray.io object,
  with every write withheld.
- ``live_objects``: the live ray.io objects ``rayop preview`` looks at, and what stopped it from
  reading some.
- ``manifests``: reading the manifests ``rayop render`` (and ``rayop preview -f``) are given, and
  refusing bad ones in one line each.
- ``recording_client``: an API client that records every write the operator makes, and may
  withhold them.
- ``rendering``: ``rayop render``'s run: the operator creates a file's objects' children on an API
  server of its own, and every create it sends is kept.
- ``verdicts``: what each first pass would do, in words: the withheld writes classified per
  ray.io object.
"""
