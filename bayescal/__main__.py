"""``python -m bayescal`` runs the command line."""

import sys

from bayescal.cli import main

sys.exit(main())
