"""Entry file for ``spark-submit`` (``spark-submit --master URL spark/submit.py --samples … ``).

spark-submit runs a file, not a module, and puts that file's directory first on ``sys.path``; from a
file outside the package, the package's own modules (``cli``, ``local``, ``schema`` …) never become
top-level modules that could shadow another library's.
"""

import sys

from stormscale.aggregation.cli import main

if __name__ == "__main__":
    sys.exit(main())
