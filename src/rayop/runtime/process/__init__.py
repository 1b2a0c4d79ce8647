"""The operator process itself: logging, the garbage collector and the C heap.

- ``logsetup``: configures the operator's logs: structured JSON lines or a readable console format.
- ``rich_console``: rich's log handler, for the console format on a terminal: the only place rich
  is imported.
- ``log_rotation``: a size-rotated log file whose rotated files are deleted when too old.
- ``collector``: tunes CPython's cyclic garbage collector for a long-running operator process.
- ``heap_trim``: returns the C heap's free pages to the operating system now and then.
"""
