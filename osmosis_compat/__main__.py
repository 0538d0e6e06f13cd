"""``python -m osmosis_compat``: the ``osmosis-compat`` command (for environments where its script is not on PATH)."""

import sys

from osmosis_compat.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
