#!/bin/sh
# Install the operator image's contents into a fresh virtual environment at PREFIX:
# exactly the hash-locked dependencies of operator/requirements.lock (pip --require-hashes: every file
# checked against its sha256; the build backend is among them), then the planner, the aggregation's
# single-process engine (stormscale-aggregation without its Spark extra) and the operator themselves
# without resolving anything else and without an isolated build (which would fetch the backend
# unhashed). The Dockerfile runs this script, and so does the test that checks the image's contents
# (tests/integration/test_packaging.py), so both install the same. `make lock` regenerates the lock.
set -eu
prefix=${1:?usage: install.sh PREFIX}
here=$(cd "$(dirname "$0")/../.." && pwd)
python3 -m venv "$prefix"
"$prefix/bin/pip" install --quiet --no-cache-dir --disable-pip-version-check --require-hashes -r "$here/operator/requirements.lock"
"$prefix/bin/pip" install --quiet --no-cache-dir --disable-pip-version-check --no-deps --no-build-isolation "$here/planner" "$here/spark" "$here/operator"
