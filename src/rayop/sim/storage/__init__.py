"""The embedded API server's object store and the base of the controllers that run on it.

:class:`~rayop.sim.storage.store.Store` is a facade over an object table with the
resourceVersion and the change feed (``objects``), a watch hub (``watch_hub``, records in
``watch_events``), a write path (``write_path``) and a delete path (``delete_path``); aliased
resources are in ``aliases``, SQLite persistence in ``sqlite``. ``controller_base`` holds
:class:`~rayop.sim.storage.controller_base.StoreController`, the base class of the kubelet,
the controller-manager's controllers and the dashboard registry.

Modules and subpackages:

- ``aliases``: resources served through a conversion of another resource's stored objects.
- ``controller_base``: the base class of the in-process controllers: kubelet, controller-manager,
  dashboard registry.
- ``delete_path``: the delete path: kube-apiserver's deletion semantics on top of the object table.
- ``objects``: the object table: every stored object, the one global resourceVersion and the change
  feed.
- ``sqlite``: SQLite persistence of the store: every acknowledged write is on disk before the
  response.
- ``store``: the object store of the embedded API server: one facade over its composed parts.
- ``watch_events``: watch plumbing of the store: change events, bounded per-resource history, live
  watchers.
- ``watch_hub``: the watch hub: per-resource watch history and the live watch streams fed from the
  table.
- ``webhook_admission``: validating admission through the webhooks stored as
  ValidatingWebhookConfigurations.
- ``write_path``: the write path: kube-apiserver's create and update semantics on top of the object
  table.
"""
