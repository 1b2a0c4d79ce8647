"""Controller machinery with no knowledge of any particular operator: queues, rate limiters,
the controller loop, informers, expectations, leader election, metrics and the manager.

Nothing here names an API group, label or resource of one operator (a test checks it); the
operator's own settings, such as its cache filters, live with its controllers."""
