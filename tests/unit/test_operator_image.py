"""The e2e bed's launch of the operator from its image: configuration, mounts, environment."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.harness.bed.operator_image import (
    SECRETS_DIR,
    chroot_script,
    env_command,
    from_image,
    image_config,
    user_ids,
)

INSPECT = json.dumps(
    {
        "OCIv1": {
            "config": {
                "User": "10001:10001",
                "Entrypoint": ["kopf"],
                "Cmd": ["run", "--standalone"],
                "Env": ["PATH=/opt/stormscale/bin:/usr/bin", "PYTHONUNBUFFERED=1", "X=a=b"],
            }
        }
    }
)


def test_the_image_is_asked_for_and_the_venv_is_the_default() -> None:
    assert not from_image({})
    assert from_image({"STORMSCALE_BED_OPERATOR": "image"})
    assert not from_image({"STORMSCALE_BED_OPERATOR": "venv"})
    with pytest.raises(ValueError, match="STORMSCALE_BED_OPERATOR"):
        from_image({"STORMSCALE_BED_OPERATOR": "docker"})


def test_the_image_config_gives_user_entrypoint_and_env() -> None:
    config = image_config(INSPECT)
    assert config.user == "10001:10001"
    assert config.entrypoint == ["kopf"]
    assert config.env == {"PATH": "/opt/stormscale/bin:/usr/bin", "PYTHONUNBUFFERED": "1", "X": "a=b"}


def test_the_operator_sees_only_the_given_environment() -> None:
    assert env_command({"B": "2", "A": "1"}, ["kopf", "run"]) == ["env", "-i", "A=1", "B=2", "kopf", "run"]


def test_the_root_is_read_only_with_a_tmpfs_and_the_secrets_then_chroot_as_the_user() -> None:
    script = chroot_script(Path("/r oot"), Path("/run/s"), "10001:10001", ["kopf", "run", "-m", "x y"])
    lines = script.splitlines()
    root = shlex.quote("/r oot")
    assert lines[0] == "set -e"
    assert f"mount -o remount,bind,ro {root}" in lines
    assert lines.index(f"mount --bind /run/s {shlex.quote('/r oot' + SECRETS_DIR)}") < lines.index(
        f"mount -o remount,bind,ro {root}"
    )
    assert any(line.startswith("mount -t tmpfs") and line.endswith(f"{root}/tmp") for line in lines)
    assert lines[-1] == f"exec chroot --userspec=10001:10001 {root} kopf run -m 'x y'"


def test_proc_dev_and_hosts_are_mounted_only_when_asked_and_before_the_root_turns_read_only() -> None:
    plain = chroot_script(Path("/r"), Path("/run/s"), "10001", ["x"]).splitlines()
    assert not any(" proc " in line or "/dev" in line or "hosts" in line for line in plain)
    lines = chroot_script(Path("/r"), Path("/run/s"), "10001", ["x"], runtime_mounts=True).splitlines()
    read_only = lines.index("mount -o remount,bind,ro /r")
    assert lines.index("mount -t proc proc /r/proc") < read_only
    assert lines.index("mount --rbind /dev /r/dev") < read_only
    assert lines.index("mount --bind /etc/hosts /r/etc/hosts") < read_only


def test_the_user_ids_are_numeric_with_the_group_defaulting_to_the_user() -> None:
    assert user_ids("10001:10002") == (10001, 10002)
    assert user_ids("10001") == (10001, 10001)
