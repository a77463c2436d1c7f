"""``python -m stormscale.publish``."""

import sys

from stormscale.publish.cli import main

if __name__ == "__main__":
    sys.exit(main())
