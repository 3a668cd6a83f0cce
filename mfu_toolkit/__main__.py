"""`python -m mfu_toolkit` runs the `mfu` command."""

import sys

from .cli import main

sys.exit(main())
