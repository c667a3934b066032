"""``python -m acid_platform.cli``: the ``acid`` command."""

from acid_platform.cli import run

run()
