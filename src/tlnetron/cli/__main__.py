"""``python -m tlnetron.cli``: the ``tlnetron`` command."""

import sys

from . import main

sys.exit(main())
