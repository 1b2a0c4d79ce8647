"""The embedded API server's HTTP face: the aiohttp app, request parsing, CRUD, watch, patch,
protobuf bodies, tables, discovery, the services proxy, tokens, RBAC, TLS and kubeconfig, and
what wraps every request: fault injection (``faults``) and the audit (``audit``).
"""
