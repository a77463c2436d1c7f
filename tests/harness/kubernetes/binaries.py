"""Build the Kubernetes test bed's binaries from the Go wrapper module in tests/harness/assets/kube.

Binaries go to .cache/bin/ and are built only when missing (or when the wrapper module changed).
Run ``python3 -m tests.harness.kubernetes.binaries`` from the repository root (``make kube-bins``); the pytest
fixtures call :func:`ensure_binaries` themselves.
Standard library only, so it runs before the virtualenv exists.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.harness.paths import ASSETS, CACHE_DIR

MODULE_DIR = ASSETS / "kube"
BIN_DIR = CACHE_DIR / "bin"
BUILD_LOG = CACHE_DIR / "build-kube.log"
STAMP = BIN_DIR / ".kube-module.sha256"
# Binary name == package directory in the wrapper module.
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kubectl")
PROGRESS_EVERY_S = 20.0


class BuildError(RuntimeError):
    """The Go build failed; the message carries the tail of its log."""


def kubernetes_version() -> str:
    """The k8s.io/kubernetes version the wrapper module requires, e.g. ``v1.32.5``."""
    match = re.search(r"^\s*k8s\.io/kubernetes (v\S+)", (MODULE_DIR / "go.mod").read_text(), re.MULTILINE)
    if match is None:
        raise BuildError(f"{MODULE_DIR / 'go.mod'} does not require k8s.io/kubernetes")
    return match.group(1)


def binary_path(name: str) -> Path:
    """Where the binary ``name`` lives once built."""
    return BIN_DIR / name


def module_digest() -> str:
    """A digest of the wrapper module's files; binaries built from a different module are stale."""
    digest = hashlib.sha256()
    for path in sorted(p for p in MODULE_DIR.rglob("*") if p.is_file()):
        digest.update(path.relative_to(MODULE_DIR).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def missing_binaries() -> list[str]:
    """Names of the binaries not built yet (all of them if the wrapper module changed since)."""
    if not STAMP.exists() or STAMP.read_text().strip() != module_digest():
        return list(BINARIES)
    return [name for name in BINARIES if not os.access(binary_path(name), os.X_OK)]


def _ldflags(version: str) -> str:
    """Strip symbols and stamp the Kubernetes version so /version does not say v0.0.0-master."""
    major, minor = version.lstrip("v").split(".")[:2]
    stamps = []
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        stamps += [
            f"-X {pkg}.gitVersion={version}",
            f"-X {pkg}.gitMajor={major}",
            f"-X {pkg}.gitMinor={minor}",
        ]
    return " ".join(["-s", "-w", *stamps])


def go_env() -> dict[str, str]:
    """Environment for a reproducible, static build with the local Go toolchain."""
    env = dict(os.environ)
    env.update(CGO_ENABLED="0", GOFLAGS="-trimpath -mod=readonly -buildvcs=false")
    env.setdefault("GOTOOLCHAIN", "local")
    return env


@contextmanager
def build_lock() -> Iterator[None]:
    """Serialise builds between concurrent callers (pytest and make, or parallel sessions)."""
    BIN_DIR.mkdir(parents=True, exist_ok=True)
    with (BIN_DIR / ".build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _say(message: str) -> None:
    print(f"[kube-bins] {message}", file=sys.stderr, flush=True)


def _run_go_build(names: Sequence[str], out_dir: Path) -> None:
    """Run one ``go build -v`` for ``names``, logging to BUILD_LOG and printing progress."""
    cmd = ["go", "build", "-v", "-ldflags", _ldflags(kubernetes_version()), "-o", f"{out_dir}/"]
    cmd += [f"./{name}" for name in names]
    start, last, packages = time.monotonic(), time.monotonic(), 0
    with BUILD_LOG.open("w") as log:
        log.write(" ".join(cmd) + "\n")
        proc = subprocess.Popen(
            cmd, cwd=MODULE_DIR, env=go_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            packages += 1
            if time.monotonic() - last >= PROGRESS_EVERY_S:
                last = time.monotonic()
                _say(f"{packages} packages compiled, {last - start:.0f} s (log: {BUILD_LOG})")
    if proc.wait() != 0:
        tail = "".join(BUILD_LOG.read_text().splitlines(keepends=True)[-40:])
        raise BuildError(f"go build failed (exit {proc.returncode}); last lines of {BUILD_LOG}:\n{tail}")


def ensure_binaries() -> Path:
    """Build every missing binary into .cache/bin and return that directory."""
    if not missing_binaries():
        return BIN_DIR
    if shutil.which("go") is None:
        raise BuildError(
            "the Go toolchain ('go') is not on PATH; it is needed to build the Kubernetes test bed"
        )
    with build_lock():
        names = missing_binaries()
        if not names:
            return BIN_DIR
        _say(f"building {', '.join(names)} ({kubernetes_version()}); a cold build takes many minutes")
        start = time.monotonic()
        with tempfile.TemporaryDirectory(dir=BIN_DIR, prefix=".build-") as tmp:
            _run_go_build(names, Path(tmp))
            for name in names:
                os.replace(Path(tmp) / name, binary_path(name))
        STAMP.write_text(module_digest() + "\n")
        _say(f"built {', '.join(names)} in {time.monotonic() - start:.0f} s into {BIN_DIR}")
    return BIN_DIR


def main() -> int:
    """Command-line entry: build what is missing, report errors without a traceback."""
    try:
        ensure_binaries()
    except BuildError as err:
        _say(str(err))
        return 1
    _say(f"binaries ready in {BIN_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
