"""Controller machinery with no Ray knowledge: queues, rate limiters, the controller loop,
informers, expectations, leader election, metrics and the manager."""
