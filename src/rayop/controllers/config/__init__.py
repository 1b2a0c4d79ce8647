"""The operator's configuration: KubeRay's environment options, feature gates, Configuration file,
startup checks and cache filter.

- ``options``: operator settings that KubeRay reads from environment variables.
- ``gates``: KubeRay v1.7's feature gates (``--feature-gates``): names, defaults, overrides.
- ``configuration``: KubeRay v1.7.0's Configuration API (``config.ray.io/v1alpha1``) as models.
- ``configuration_file``: reads a KubeRay ``--config`` file, or says where it is wrong.
- ``configuration_checks``: the checks a Configuration must pass beyond its types.
- ``pod_defaults``: the fleet-wide pod defaults of KubeRay's Configuration, and how KubeRay puts
  them on pods.
- ``startup_checks``: the checks KubeRay v1.7 makes against the API server before it starts its
  controllers.
- ``cache_config``: what the operator's shared cache holds: KubeRay's label filters.
"""
