"""The embedded API server's object store: state and reads, the write path, watch history,
SQLite persistence, and the base of controllers that run on the store.
"""
