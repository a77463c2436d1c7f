"""Entry file for ``spark-submit`` (``spark-submit --master URL spark/submit.py --samples … ``).

It lives outside the package on purpose: spark-submit puts the script's own directory first on
``sys.path``, and from inside the package ``profile.py`` would shadow the standard library's.
"""

import sys

from stormscale.spark.cli import main

if __name__ == "__main__":
    sys.exit(main())
