"""``python -m console``: the operator console."""

from .app import main

main()
