"""Load scenarios that measure whether raising --reconcile-concurrency helps, and their reports."""
