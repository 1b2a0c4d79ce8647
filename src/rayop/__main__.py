"""``python -m rayop``."""

from rayop.cli import main

main()
