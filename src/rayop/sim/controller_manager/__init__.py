"""The embedded kube-controller-manager: the batch Job controller, garbage collector, endpoints
and service-account controllers.
"""
