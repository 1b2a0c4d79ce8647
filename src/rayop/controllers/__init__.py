"""The RayCluster, RayJob and RayService reconcilers and the Ray dashboard client."""
