"""A real kubelet on this machine, end to end: ``make try-kubelet`` (``python -m
tests.harness.kubernetes.kubelet_try``), about 3 minutes once the operator's image is built.

What the test bed's pod runner stands in for, run for real and checked:

1. the kubelet, built from the published ``k8s.io/kubernetes`` module (the API server's version, its
   wrapper module copied with a ``kubelet`` command; ``go build -mod=mod`` adds the few modules the
   kubelet needs beyond the API server's, verified by the Go checksum database);
2. containerd and runc from Debian's archive at pinned versions, unpacked under ``.cache/`` (nothing
   installed on the system);
3. the workload and the pod sandbox's image (``registry.k8s.io/pause:3.10``: no registry is reachable)
   made from the stand-in base by buildah and imported with ``ctr``;
4. the bed's control plane; the kubelet registers its node, runs a static pod and a pod the API server
   binds to it (``nodeName``), each a real container in its own cgroup with its CPU limit as the CFS
   quota, and serves ``/metrics/cadvisor`` with each container's CPU time and quota, labelled with its
   pod and container.

Three settings this machine needs, each found by a failure (docs/testbed.md, "A real kubelet"):
containerd's ``restrict_oom_score_adj`` (runc cannot lower ``oom_score_adj`` here: ``failed to update
/proc/self/oom_score_adj: Permission denied``), eviction and image GC thresholds below the disk's use
(with 14 % of the disk free, under the kubelet's default 15 %, it reported DiskPressure and deleted the
imported images), and the kubelet's
``--containerd`` socket for cAdvisor (without it the containers' series carry no pod or container label).
Every process it starts is stopped at the end; the exit status is 0 when both pods ran and cAdvisor
served their containers' CPU.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import requests

from tests.harness.kubernetes import binaries
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.paths import CACHE_DIR
from tests.harness.process import Daemon, LaunchSpec, free_port, new_run_dir
from tests.harness.waiting import wait_for

WORK = CACHE_DIR / "kubelet-try"
#: Debian bookworm's versions, as apt serves them.
DEBS = ("containerd=1.6.20~ds1-1+deb12u3", "runc=1.1.5+ds1-1+deb12u1")
IMAGE = "registry.k8s.io/pause:3.10"
BASE = "python:3.11-slim"
STORAGE = CACHE_DIR / "images"
NODE = "try-node"
RUNNING_S = 180.0

KUBELET_MAIN = """// Command kubelet, built from the published k8s.io/kubernetes module (make try-kubelet).
package main

import (
\t"os"
\t_ "time/tzdata"

\t"k8s.io/component-base/cli"
\t_ "k8s.io/component-base/logs/json/register"
\t_ "k8s.io/component-base/metrics/prometheus/clientgo"
\t_ "k8s.io/component-base/metrics/prometheus/version"
\t"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
\tos.Exit(cli.Run(app.NewKubeletCommand()))
}
"""


def say(line: str) -> None:
    print(f"try-kubelet: {line}", flush=True)


def build_kubelet() -> Path:
    """``.cache/kubelet-try/kubelet``, built once."""
    out = WORK / "kubelet"
    if out.exists():
        return out
    module = WORK / "mod"
    shutil.rmtree(module, ignore_errors=True)
    shutil.copytree(binaries.MODULE_DIR, module)
    (module / "kubelet").mkdir(exist_ok=True)
    (module / "kubelet" / "main.go").write_text(KUBELET_MAIN, encoding="utf-8")
    env = {**binaries.go_env(), "GOFLAGS": "-trimpath -mod=mod -buildvcs=false"}
    say(f"building the kubelet ({binaries.kubernetes_version()}) from Go modules")
    subprocess.run(
        ["go", "build", "-o", str(out), "./kubelet"], cwd=module, env=env, check=True, timeout=3600
    )
    return out


def unpack_debs() -> Path:
    """containerd and runc from Debian's archive, unpacked under ``.cache/kubelet-try/root``."""
    root = WORK / "root"
    if (root / "usr" / "bin" / "containerd").exists():
        return root
    debs = WORK / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", *DEBS], cwd=debs, check=True, timeout=600, capture_output=True)
    for deb in sorted(debs.glob("*.deb")):
        subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True, timeout=120)
    return root


def buildah(*args: str) -> str:
    storage = [
        "--root",
        str(STORAGE / "storage"),
        "--runroot",
        str(STORAGE / "run"),
        "--storage-driver",
        "vfs",
    ]
    done = subprocess.run(
        ["buildah", *storage, *args], check=True, capture_output=True, text=True, timeout=600
    )
    return done.stdout.strip()


def image_archive() -> Path:
    """``IMAGE`` (the stand-in base running ``sleep infinity``) as an OCI archive."""
    archive = WORK / "pause.tar"
    if archive.exists():
        return archive
    container = buildah("from", "--pull-never", BASE)
    buildah("config", "--entrypoint", "[]", "--cmd", '["sleep", "infinity"]', container)
    buildah("commit", "--rm", container, IMAGE)
    buildah("push", IMAGE, f"oci-archive:{archive}:{IMAGE}")
    return archive


def containerd_config(run: Path, root: Path) -> Path:
    config = run / "containerd.toml"
    config.write_text(
        f"""version = 2
root = "{run}/containerd"
state = "{run}/containerd-state"
[grpc]
  address = "{run}/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{IMAGE}"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "{root}/usr/sbin/runc"
        SystemdCgroup = false
""",
        encoding="utf-8",
    )
    return config


def kubelet_config(run: Path, read_port: int) -> Path:
    config = run / "kubelet.yaml"
    lines = [
        "apiVersion: kubelet.config.k8s.io/v1beta1",
        "kind: KubeletConfiguration",
        "address: 127.0.0.1",
        f"port: {free_port()}",
        f"readOnlyPort: {read_port}",
        "healthzBindAddress: 127.0.0.1",
        f"healthzPort: {free_port()}",
        "cgroupDriver: cgroupfs",
        "failSwapOn: false",
        f"staticPodPath: {run}/manifests",
        f"containerRuntimeEndpoint: unix://{run}/containerd.sock",
        "authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}",
        "authorization: {mode: AlwaysAllow}",
        'evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"}',
        "imageGCHighThresholdPercent: 100",
        "imageGCLowThresholdPercent: 99",
    ]
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return config


def pod(name: str, cpu: str, node: str | None) -> dict[str, object]:
    spec: dict[str, object] = {
        "hostNetwork": True,
        "tolerations": [{"operator": "Exists"}],
        "containers": [
            {
                "name": "worker",
                "image": IMAGE,
                "imagePullPolicy": "Never",
                "resources": {"limits": {"cpu": cpu}},
            }
        ],
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def cadvisor_quota(read_port: int, pod_name: str) -> float | None:
    """The quota (CPU cores) cAdvisor reports for ``pod_name``'s container, once it reports its CPU time."""
    try:
        text = requests.get(f"http://127.0.0.1:{read_port}/metrics/cadvisor", timeout=10).text
    except requests.RequestException:
        return None
    mine = [
        line for line in text.splitlines() if f'pod="{pod_name}"' in line and 'container="worker"' in line
    ]
    if not any(line.startswith("container_cpu_usage_seconds_total{") for line in mine):
        return None
    quota = [line for line in mine if line.startswith("container_spec_cpu_quota{")]
    return float(quota[0].rsplit(" ", 2)[1]) / 100_000 if quota else None


def is_running(plane: ControlPlane, name: str) -> bool:
    """Whether the API server has pod ``name`` in phase Running."""
    status = json.loads(plane.kubectl("get", "pod", name, "-o", "json")).get("status", {})
    return bool(status.get("phase") == "Running")


@contextlib.contextmanager
def started(spec: LaunchSpec) -> Iterator[Daemon]:
    daemon = Daemon(spec)
    try:
        yield daemon
    finally:
        daemon.stop()


def stop_containers(ctr: list[str]) -> None:
    """Kill what containerd still runs (its shims outlive it otherwise)."""
    tasks = subprocess.run(
        [*ctr, "tasks", "ls", "-q"], capture_output=True, text=True, timeout=30, check=False
    )
    for task in tasks.stdout.split():
        subprocess.run(
            [*ctr, "tasks", "kill", "-s", "KILL", task], capture_output=True, timeout=30, check=False
        )
    time.sleep(2)
    for task in tasks.stdout.split():
        subprocess.run([*ctr, "tasks", "delete", task], capture_output=True, timeout=30, check=False)


def main() -> int:
    WORK.mkdir(parents=True, exist_ok=True)
    kubelet, root, archive = build_kubelet(), unpack_debs(), image_archive()
    binaries.ensure_binaries()
    run = new_run_dir("kubelet-try-")
    (run / "manifests").mkdir()
    ctr = [str(root / "usr/bin/ctr"), "--address", str(run / "containerd.sock"), "-n", "k8s.io"]
    env = {"PATH": f"{root}/usr/bin:{root}/usr/sbin:/usr/sbin:/usr/bin:/sbin:/bin"}
    read_port = free_port()
    containerd = LaunchSpec(
        "containerd", [str(root / "usr/bin/containerd"), "--config", str(containerd_config(run, root))],
        env, run, run / "containerd.log", run / "containerd.log",
    )  # fmt: skip
    with ControlPlane(run / "plane") as plane, started(containerd) as daemon:
        try:
            daemon.wait_ready((run / "containerd.sock").exists, 60, "containerd's socket")
            subprocess.run([*ctr, "images", "import", "--base-name", IMAGE.rsplit(":", 1)[0], str(archive)],
                           check=True, capture_output=True, timeout=300)  # fmt: skip
            (run / "manifests" / "static.json").write_text(json.dumps(pod("static", "200m", None)))
            argv = [
                str(kubelet),
                "--config",
                str(kubelet_config(run, read_port)),
                "--root-dir",
                str(run / "kubelet"),
            ]
            argv += ["--hostname-override", NODE, "--containerd", str(run / "containerd.sock")]
            argv += ["--kubeconfig", str(plane.kubeconfig)]
            spec = LaunchSpec("kubelet", argv, env, run, run / "kubelet.log", run / "kubelet.log")
            with started(spec) as node:
                node.wait_ready(lambda: NODE in plane.kubectl("get", "nodes", "-o", "name"), 120, "the node")
                plane.kubectl("apply", "-f", "-", stdin=json.dumps(pod("bound", "300m", NODE)))
                for name, cores in ((f"static-{NODE}", 0.2), ("bound", 0.3)):
                    node.wait_ready(partial(is_running, plane, name), RUNNING_S, f"pod {name} Running")
                    quota = wait_for(partial(cadvisor_quota, read_port, name), 120, f"cAdvisor on {name}")
                    say(f"pod {name}: Running in a container; cAdvisor: its CPU time, a quota of {quota:g}")
                    if abs(quota - cores) > 1e-9:
                        say(f"pod {name}: the quota is {quota:g} cores, its limit {cores:g}")
                        return 1
                plane.kubectl("delete", "pod", "bound", "--grace-period=1", "--wait=false")
                (run / "manifests" / "static.json").unlink()
                time.sleep(5)
        finally:
            stop_containers(ctr)
    say(f"both pods ran under the real kubelet; logs in {run}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
