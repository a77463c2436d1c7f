"""The operator run from its image's root filesystem, as a pod would run it, without a container engine.

``make image`` builds ``stormscale/operator:0.1.0`` with buildah (storage under ``.cache/images``). The bed
takes a working container of it (``buildah from`` + ``buildah mount``: the image itself stays untouched)
and runs the image's entrypoint in a private mount namespace:

- the root filesystem bind-mounted read-only (the chart's ``readOnlyRootFilesystem``),
- a tmpfs at ``/tmp`` (the chart's emptyDir),
- the bed's kubeconfig, owned by the image's user and mode 0400, bind-mounted read-only at
  :data:`SECRETS_DIR` (as the kubelet projects a service-account volume),
- ``chroot`` as the image's user (10001:10001) with the image's environment; the host's network (the
  API server, Prometheus and Nimbus answer on loopback).

``STORMSCALE_BED_OPERATOR=image`` asks for it (``make test`` sets it, after building the image); without it
``kopf`` runs from the virtual environment (the demo, the benchmarks, a developer's quick loop). Asked for,
a missing image is an error, not a skip.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.harness.paths import REPO_ROOT

IMAGE = "stormscale/operator:0.1.0"
STORAGE = REPO_ROOT / ".cache" / "images"
SECRETS_DIR = "/run/secrets/stormscale"  # /run, not /var/run: that is a symlink in the image
MODE_ENV = "STORMSCALE_BED_OPERATOR"


class ImageError(RuntimeError):
    """The operator's image is missing or cannot be mounted (run ``make image``)."""


def from_image(environ: Mapping[str, str]) -> bool:
    """True when ``STORMSCALE_BED_OPERATOR`` asks for the image (``image``); ``venv`` or unset: the
    virtual environment."""
    mode = environ.get(MODE_ENV, "venv")
    if mode not in ("image", "venv"):
        raise ValueError(f"{MODE_ENV}={mode!r}: expected 'image' or 'venv'")
    return mode == "image"


@dataclass(frozen=True)
class ImageConfig:
    """What the image's configuration says about how to run it."""

    user: str
    entrypoint: list[str]
    env: dict[str, str]


def image_config(inspect_json: str) -> ImageConfig:
    """The user, entrypoint and environment from ``buildah inspect``'s OCI configuration."""
    config = json.loads(inspect_json)["OCIv1"]["config"]
    env = dict(item.split("=", 1) for item in config.get("Env") or [])
    return ImageConfig(config.get("User") or "0:0", list(config.get("Entrypoint") or []), env)


def chroot_script(
    rootfs: Path, secrets: Path, user: str, command: Sequence[str], *, runtime_mounts: bool = False
) -> str:
    """The shell script run by ``unshare -m``: mounts, then ``exec chroot`` (the daemon's pid stays
    the operator's, so a SIGTERM to it reaches Kopf). ``runtime_mounts``: ``/proc``, ``/dev`` and
    ``/etc/hosts`` too, as a container runtime provides them (Java finds its libraries through
    ``/proc/self/exe``, Spark's launcher reads ``/dev/fd``, PySpark binds ``localhost``); the host's
    process table shows, there being no PID namespace."""
    root, target = shlex.quote(str(rootfs)), shlex.quote(f"{rootfs}{SECRETS_DIR}")
    runtime = [
        f"mount -t proc proc {root}/proc",
        f"mount --rbind /dev {root}/dev",
        f"touch {root}/etc/hosts",
        f"mount --bind /etc/hosts {root}/etc/hosts",
    ]
    steps = [
        "set -e",
        "mount --make-rprivate /",
        f"mount --bind {root} {root}",
        *(runtime if runtime_mounts else []),
        f"mount --bind {shlex.quote(str(secrets))} {target}",
        f"mount -o remount,bind,ro {target}",
        f"mount -o remount,bind,ro {root}",
        f"mount -t tmpfs -o mode=1777,size=64m tmpfs {root}/tmp",
        f"exec chroot --userspec={shlex.quote(user)} {root} {shlex.join(command)}",
    ]
    return "\n".join(steps)


def env_command(env: Mapping[str, str], argv: Sequence[str]) -> list[str]:
    """``env -i K=V ... argv``: the operator sees exactly ``env``, nothing of the host's environment."""
    return ["env", "-i", *(f"{k}={v}" for k, v in sorted(env.items())), *argv]


def _buildah(*args: str) -> str:
    storage = ["--root", str(STORAGE / "storage"), "--runroot", str(STORAGE / "run")]
    argv = ["buildah", *storage, "--storage-driver", "vfs", *args]
    try:
        done = subprocess.run(argv, check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as e:
        detail = getattr(e, "stderr", "") or str(e)
        raise ImageError(f"{shlex.join(argv)} failed ({detail.strip()}); build it with `make image`") from e
    return done.stdout.strip()


@dataclass
class OperatorRootfs:
    """A working container of the operator's image, mounted; :meth:`remove` drops it."""

    container: str
    rootfs: Path
    config: ImageConfig

    @classmethod
    def mount(cls, image: str = IMAGE) -> OperatorRootfs:
        config = image_config(_buildah("inspect", "--type", "image", image))
        container = _buildah("from", "--pull-never", image)
        rootfs = Path(_buildah("mount", container))
        mount_point = rootfs / SECRETS_DIR.lstrip("/")
        if not mount_point.parent.resolve().is_relative_to(rootfs.resolve()):
            raise ImageError(f"{SECRETS_DIR} leads out of the image's root filesystem (a symlink)")
        mount_point.mkdir(parents=True, exist_ok=True)  # the volume's mount point, in the container only
        return cls(container, rootfs, config)

    def remove(self) -> None:
        _buildah("umount", self.container)
        _buildah("rm", self.container)


def user_ids(user: str) -> tuple[int, int]:
    """The numeric ``uid:gid`` of an image's ``User`` (``uid`` alone means the group of that number)."""
    uid, _, gid = user.partition(":")
    return int(uid), int(gid or uid)


def project_kubeconfig(kubeconfig: Path, secrets: Path, user: str) -> str:
    """Copy the kubeconfig into ``secrets`` for the image's user (0400, as a projected volume with
    that owner); its path inside the image."""
    secrets.mkdir(parents=True, exist_ok=True)
    uid, gid = user_ids(user)
    target = secrets / "kubeconfig"
    shutil.copyfile(kubeconfig, target)
    os.chown(target, uid, gid)
    target.chmod(0o400)
    return f"{SECRETS_DIR}/kubeconfig"


def image_argv(
    mounted: OperatorRootfs,
    secrets: Path,
    kopf_args: Sequence[str],
    env: Mapping[str, str],
    *,
    runtime_mounts: bool = False,
) -> list[str]:
    """The host command that runs the image's entrypoint with ``kopf_args`` (as a pod's args
    replace the image's CMD) and ``env`` over the image's own environment (``runtime_mounts``:
    :func:`chroot_script`)."""
    command = env_command({**mounted.config.env, **env}, [*mounted.config.entrypoint, *kopf_args])
    script = chroot_script(
        mounted.rootfs, secrets, mounted.config.user, command, runtime_mounts=runtime_mounts
    )
    return ["unshare", "--mount", "sh", "-c", script]
