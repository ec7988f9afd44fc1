"""``python -m l1scale.cli``: the ``l1scale`` command."""

from . import main

main()  # pragma: no cover
