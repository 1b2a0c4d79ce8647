"""Informers: list and watch a resource into a cache that reconcilers read and sources feed from.

- ``shared_informer``: one list+watch of a resource feeding a cache and any number of handlers.
- ``factory``: shares informers: one per (resource, namespace, label selector) in a process.
- ``reflector``: keeps a store in step with the API server by list and watch.
- ``backoff``: jittered exponential backoff between the reflector's list/watch attempts.
- ``indexer``: the cache: objects keyed ``namespace/name`` with named secondary indexes.
- ``compact_store``: compact encoding of cached objects: orjson bytes deflated against learned
  dictionaries.
- ``frozen``: read-only views of decoded JSON objects, as the caches hand them out.
- ``cache_reader``: :class:`CacheReader`, the read side of a cache as a reconciler sees it.
- ``on_demand``: :class:`OnDemandCache`, a cache whose informer is made on the first read.
- ``sources``: controller sources fed by shared informers: ``for_`` (the object itself) and
  ``owns``.
"""
