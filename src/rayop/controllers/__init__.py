"""The Ray controllers, their assembly into one operator, and the Ray dashboard client."""
