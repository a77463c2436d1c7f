"""Where the test bed keeps things: the repository, its build cache, run state and build assets.

Standard library only (the build and ``up``/``down`` commands run before the virtualenv exists).
"""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Everything built or downloaded (binaries, STORM_HOME); git-ignored.
CACHE_DIR = REPO_ROOT / ".cache"
#: Run state and logs of every control plane, cluster, stack and demo; git-ignored.
RUN_ROOT = REPO_ROOT / ".run"
#: The build files: Go wrapper modules, Maven poms, log4j2 configs, topologies, install scripts.
ASSETS = Path(__file__).resolve().parent / "assets"
