"""``python -m stormscale.aggregation …`` (for ``spark-submit``, use ``spark/submit.py``)."""

import sys

from stormscale.aggregation.cli import main

if __name__ == "__main__":
    sys.exit(main())
