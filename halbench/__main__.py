"""``python -m halbench``: the same as the ``halbench`` command."""

from halbench.cli import main

main()
