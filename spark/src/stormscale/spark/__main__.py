"""``python -m stormscale.spark …``; also the file to hand to ``spark-submit`` (absolute imports)."""

import sys

from stormscale.spark.cli import main

if __name__ == "__main__":
    sys.exit(main())
