#!/bin/sh
# Install the operator image's contents into a fresh virtual environment at PREFIX:
# exactly the pinned dependencies of operator/requirements.lock, then the planner, the
# aggregation's single-process engine (stormscale-aggregation without its Spark extra) and the operator
# themselves without resolving anything else. The Dockerfile runs this script, and so does the test
# that checks the image's contents (tests/integration/test_packaging.py), so both install the same.
set -eu
prefix=${1:?usage: install.sh PREFIX}
here=$(cd "$(dirname "$0")/../.." && pwd)
python3 -m venv "$prefix"
"$prefix/bin/pip" install --quiet --no-cache-dir --disable-pip-version-check -r "$here/operator/requirements.lock"
"$prefix/bin/pip" install --quiet --no-cache-dir --disable-pip-version-check --no-deps "$here/planner" "$here/spark" "$here/operator"
