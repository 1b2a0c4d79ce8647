"""Talking to a Kubernetes API server: configuration, the async client, throttling, errors.

Modules and subpackages:

- ``client``: an asyncio Kubernetes API client generic over any group/version/resource, on plain
  dicts.
- ``clock``: time as an injected dependency, and the Kubernetes timestamp formats.
- ``codec``: decoding of the JSON objects an API server sends, in responses and watch streams.
- ``config``: where the API server is and how to authenticate to it, loaded from a kubeconfig or a
  pod.
- ``credentials``: credential providers: what puts the ``Authorization`` header on each request.
- ``dns_timing``: times the client's DNS lookups (``rest_client_dns_resolution_duration_seconds``).
- ``errors``: exceptions for failed API requests, each keeping the Kubernetes ``Status`` it came
  from.
- ``exec_credentials``: runs kubeconfig exec credential plugins and reads the ExecCredential they
  print.
- ``kubeconfig_file``: reads kubeconfig files with PyYAML: merging, relative paths and context
  selection.
- ``metrics``: Prometheus metrics of the REST client, named and bucketed as client-go/component-base
  do.
- ``object_client``: :class:`ObjectClient`, the verbs on one object a reconciler writes through.
- ``options``: the options of LIST and WATCH calls, defined once for the client and for whatever
  takes one.
- ``resource``: names an API resource (group, version, plural) and builds its REST paths.
- ``resources``: well-known resources: the Kubernetes kinds the operator touches and KubeRay's
  ray.io/v1 kinds.
- ``throttle``: client-side request throttling: a token bucket with ``qps`` and ``burst``.
- ``resource_buckets``: one token bucket per API resource, as controller-runtime's client has.
- ``transport``: the client's request path: pooled HTTP, throttling, Retry-After retries, auth and
  metrics.
- ``watch``: decoding of watch streams: newline-delimited JSON events arriving in arbitrary chunks.
"""
