"""The ray.io/v1 API: typed models of RayCluster, RayJob and RayService, and their CRDs."""
