"""rayop's tests, one package per area (pytest's rootdir, the repo root, is on sys.path)."""
