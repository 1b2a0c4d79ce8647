"""The embedded API server's HTTP face: the aiohttp app, request parsing, CRUD, watch, patch,
protobuf bodies, tables, discovery, proxy, tokens, RBAC and TLS.
"""
