"""KubeRay v1.7's batch scheduler integrations: Volcano, YuniKorn, KAI Scheduler,
scheduler-plugins, and Kubernetes workload-aware scheduling (the ``KubernetesWAS`` gate).

:mod:`.registry` picks the scheduler from the operator options and is what the controllers
call; one module per scheduler says what it creates and what it adds to pods; :mod:`.gang_size`
and :mod:`.quantities` hold the replica and resource arithmetic they share.
"""
