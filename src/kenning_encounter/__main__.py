"""``python -m kenning_encounter``: the same command line as ``kenning-encounter``."""

import sys

from kenning_encounter.cli import main

if __name__ == "__main__":
    sys.exit(main())
