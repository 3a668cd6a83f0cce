"""``python -m mfu_toolkit.cli``: the ``mfu`` command."""

import sys

from . import main

sys.exit(main())
