"""The embedded API server's object store and the base of the controllers that run on it.

:class:`~rayop.sim.storage.store.Store` is a facade over an object table with the
resourceVersion and the change feed (``objects``), a watch hub (``watch_hub``, records in
``watch_events``), a write path (``write_path``) and a delete path (``delete_path``); aliased
resources are in ``aliases``, SQLite persistence in ``sqlite``. ``controller_base`` holds
:class:`~rayop.sim.storage.controller_base.StoreController`, the base class of the kubelet,
the controller-manager's controllers and the dashboard registry.
"""
