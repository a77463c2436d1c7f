"""``python -m stormscale.spark …`` (for ``spark-submit``, use ``spark/submit.py``)."""

import sys

from stormscale.spark.cli import main

if __name__ == "__main__":
    sys.exit(main())
