"""Build the helm CLI from the Go wrapper module in tests/harness/assets/helm into .cache/bin (when missing).

``python3 -m tests.harness.kubernetes.helm`` (``make helm-bin``); the chart tests call :func:`ensure_helm`.
Standard library only. Shares the build lock and Go settings of :mod:`tests.harness.kubernetes.binaries`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.harness.kubernetes.binaries import BIN_DIR, BuildError, build_lock, go_env
from tests.harness.paths import ASSETS, CACHE_DIR

MODULE_DIR = ASSETS / "helm"
HELM = BIN_DIR / "helm"
BUILD_LOG = CACHE_DIR / "build-helm.log"


def helm_version() -> str:
    """The helm version the wrapper module pins, e.g. ``v3.17.3``."""
    match = re.search(r"^require helm\.sh/helm/v3 (v\S+)", (MODULE_DIR / "go.mod").read_text(), re.MULTILINE)
    if match is None:
        raise BuildError(f"{MODULE_DIR / 'go.mod'} does not require helm.sh/helm/v3")
    return match.group(1)


def _say(message: str) -> None:
    print(f"[helm-bin] {message}", file=sys.stderr, flush=True)


def ensure_helm() -> Path:
    """Build ``helm`` if it is missing; return its path."""
    if os.access(HELM, os.X_OK):
        return HELM
    if shutil.which("go") is None:
        raise BuildError("the Go toolchain ('go') is not on PATH; it is needed to build helm")
    with build_lock():
        if os.access(HELM, os.X_OK):
            return HELM
        version = helm_version()
        _say(f"building helm {version} (a cold build takes several minutes; log: {BUILD_LOG})")
        start = time.monotonic()
        ldflags = f"-s -w -X helm.sh/helm/v3/internal/version.version={version}"
        cmd = ["go", "build", "-ldflags", ldflags, "-o", str(HELM) + ".tmp", "helm.sh/helm/v3/cmd/helm"]
        with BUILD_LOG.open("w") as log:
            done = subprocess.run(
                cmd, cwd=MODULE_DIR, env=go_env(), stdout=log, stderr=subprocess.STDOUT, check=False
            )
        if done.returncode != 0:
            tail = "".join(BUILD_LOG.read_text().splitlines(keepends=True)[-40:])
            raise BuildError(f"go build of helm failed (exit {done.returncode}):\n{tail}")
        os.replace(str(HELM) + ".tmp", HELM)
        _say(f"built helm {version} in {time.monotonic() - start:.0f} s")
    return HELM


if __name__ == "__main__":
    print(ensure_helm())
