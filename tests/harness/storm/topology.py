"""Benchmark topologies: build the topology jar, submit a Flux YAML, wait for it, kill it.

The jar is a zip written at run time into the run directory: ``resources/storm.py`` (from the
STORM_HOME, extracted from the multilang-python jar at build time) plus the project's multilang
scripts from ``assets/topologies/resources/``. Each shape (``linear``, ``diamond``, ``topology10``) is a
Flux YAML with dollar-brace placeholders whose defaults sit in ``<shape>.properties``; overrides are
merged and handed to Flux with ``--filter``.

``language="jvm"`` submits the JVM twin of a shape instead: ``topologies/jvm/<shape>.yaml`` with the
project's Java RateSpout and CpuBolt, whose jar Maven builds into ``.cache/`` (:mod:`.jvm`). It takes the
same parameters (``<shape>.properties``, then ``jvm/<shape>.properties`` on top: the topology name).
JVM-only shapes (``kafka-linear``: the linear shape with Storm's KafkaSpout as its source) have no
multilang twin; their ``jvm/<shape>.properties`` holds every default.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from stormscale.storm import TopologyNotFoundError
from stormscale.storm.model import ComponentAggregate
from tests.harness.paths import ASSETS
from tests.harness.process import DaemonError, log_tail
from tests.harness.storm.daemons import StormEndpoints, base_conf, daemon_classpath, java_argv, write_conf
from tests.harness.storm.jvm import ensure_topology_jar
from tests.harness.waiting import wait_for

TOPOLOGY_DIR = ASSETS / "topologies"
SHAPES = ("linear", "diamond", "topology10")
#: Shapes with JVM components only (no multilang twin): ``language="jvm"``.
JVM_ONLY_SHAPES = ("kafka-linear",)
LANGUAGES = ("multilang", "jvm")
SUBMIT_TIMEOUT_S = 180.0
ACTIVE_TIMEOUT_S = 60.0
StatsPredicate = Callable[[dict[str, ComponentAggregate]], bool]


@dataclass(frozen=True)
class Topology:
    """A submitted topology: its name (for kill/rebalance) and id (for stats)."""

    name: str
    id: str
    shape: str
    properties: dict[str, str]
    language: str = "multilang"


def read_properties(path: Path) -> dict[str, str]:
    """``key=value`` lines of a .properties file (``#`` comments, no continuations)."""
    props = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            props[key.strip()] = value.strip()
    return props


def write_properties(path: Path, props: dict[str, str]) -> Path:
    """Write ``props`` as a .properties file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in sorted(props.items())))
    return path


def build_topology_jar(storm_home: Path, out: Path) -> Path:
    """Zip storm.py and the multilang scripts under ``resources/`` (what ShellBolt runs from)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
        jar.write(storm_home / "multilang" / "resources" / "storm.py", "resources/storm.py")
        for script in sorted((TOPOLOGY_DIR / "resources").glob("*.py")):
            jar.write(script, f"resources/{script.name}")
    return out


def flux_file(shape: str, language: str = "multilang") -> Path:
    """The Flux YAML of ``shape`` in ``language`` (``multilang`` or ``jvm``)."""
    if language not in LANGUAGES:
        raise ValueError(f"unknown component language {language!r}; known: {LANGUAGES}")
    if shape in JVM_ONLY_SHAPES and language != "jvm":
        raise ValueError(f"topology shape {shape!r} has JVM components only (language='jvm')")
    if shape not in SHAPES + JVM_ONLY_SHAPES:
        raise ValueError(f"unknown topology shape {shape!r}; known: {SHAPES + JVM_ONLY_SHAPES}")
    folder = TOPOLOGY_DIR if language == "multilang" else TOPOLOGY_DIR / "jvm"
    return folder / f"{shape}.yaml"


def topology_properties(
    shape: str, overrides: dict[str, object] | None = None, language: str = "multilang"
) -> dict[str, str]:
    """The shape's defaults (the JVM's on top for ``language="jvm"``) with ``overrides`` applied (values
    as strings)."""
    flux_file(shape, language)  # checks both names
    props = {} if shape in JVM_ONLY_SHAPES else read_properties(TOPOLOGY_DIR / f"{shape}.properties")
    if language == "jvm":
        props.update(read_properties(TOPOLOGY_DIR / "jvm" / f"{shape}.properties"))
    for key, value in (overrides or {}).items():
        props[key] = str(value)
    return props


def storm_options(conf: Mapping[str, object]) -> str:
    """``conf`` as ``-Dstorm.options`` (what ``storm jar -c key=value`` sets): URL-encoded ``k=json``
    pairs joined by commas; StormSubmitter adds them to the topology's conf."""
    return ",".join(quote(f"{key}={json.dumps(value)}", safe="=") for key, value in conf.items())


def flux_argv(
    ep: StormEndpoints,
    jar: Path,
    yaml_file: Path,
    props_file: Path,
    work: Path,
    *,
    conf: Mapping[str, object] | None = None,
    jar_on_classpath: bool = False,
) -> list[str]:
    """The Flux submit command (what ``storm jar topo.jar org.apache.storm.flux.Flux`` runs); ``conf``
    adds topology settings the Flux YAML does not set (``storm jar -c``); ``jar_on_classpath``: Flux
    instantiates the components from the jar (JVM components; ``storm jar`` adds it too)."""
    conf_file = write_conf(work / "client.yaml", base_conf(ep))
    argv = java_argv(ep, f"submit-{props_file.stem}", conf_file, work, 256)
    if conf:
        argv.append(f"-Dstorm.options={storm_options(conf)}")
    classpath = f"{daemon_classpath(ep)}:{jar}" if jar_on_classpath else daemon_classpath(ep)
    argv += [f"-Dstorm.jar={jar}", "-cp", classpath, "org.apache.storm.flux.Flux"]
    return [*argv, "--remote", "--filter", str(props_file), str(yaml_file)]


def submit(
    ep: StormEndpoints,
    shape: str,
    overrides: dict[str, object] | None = None,
    timeout_s: float = SUBMIT_TIMEOUT_S,
    conf: Mapping[str, object] | None = None,
    *,
    language: str = "multilang",
) -> Topology:
    """Submit ``shape`` with Flux and wait until Nimbus lists it ACTIVE; ``conf``: extra topology
    settings (Storm's own keys, e.g. ``topology.executor.receive.buffer.size``); ``language``:
    ``multilang`` (Python components) or ``jvm`` (the project's Java components)."""
    props = topology_properties(shape, overrides, language)
    name = props["topology.name"]
    work = ep.storm_dir / "topologies" / name
    if language == "jvm":
        jar = ensure_topology_jar()
    else:
        jar = build_topology_jar(Path(ep.storm_home), work / f"{name}.jar")
    props_file = write_properties(work / f"{name}.properties", props)
    yaml_file = flux_file(shape, language)
    argv = flux_argv(ep, jar, yaml_file, props_file, work, conf=conf, jar_on_classpath=language == "jvm")
    console = work / "submit.out"
    with console.open("wb") as out:
        done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s, check=False)
    if done.returncode != 0:
        raise DaemonError(f"Flux submit of {name} failed ({done.returncode}):\n{log_tail(console)}")
    return Topology(name, wait_active(ep, name), shape, props, language)


def wait_active(ep: StormEndpoints, name: str, timeout_s: float = ACTIVE_TIMEOUT_S) -> str:
    """Wait until Nimbus lists topology ``name`` as ACTIVE; return its id."""

    def active_id() -> str | None:
        topo = ep.nimbus().topology(name)
        return topo.id if topo is not None and topo.status == "ACTIVE" else None

    return wait_for(active_id, timeout_s, f"topology {name} ACTIVE", every_s=1.0, error=DaemonError)


def kill(ep: StormEndpoints, name: str, timeout_s: float = 60.0) -> None:
    """Kill topology ``name`` at once (no error if it is already gone); wait until Nimbus stops listing it."""
    nimbus = ep.nimbus()
    with contextlib.suppress(TopologyNotFoundError):
        nimbus.kill(name, wait_secs=0)
    wait_for(
        lambda: nimbus.topology(name) is None,
        timeout_s,
        f"topology {name} no longer listed after kill",
        every_s=1.0,
        error=DaemonError,
    )


def wait_for_stats(
    ep: StormEndpoints,
    topology_id: str,
    ready: StatsPredicate,
    timeout_s: float,
) -> dict[str, ComponentAggregate]:
    """Poll Nimbus's component stats until ``ready(stats)``; return them, or raise with the last seen."""
    last: list[dict[str, ComponentAggregate]] = [{}]

    def met() -> dict[str, ComponentAggregate] | None:
        last[0] = dict(ep.nimbus().topology_page(topology_id).components)
        return last[0] if ready(last[0]) else None

    return wait_for(
        met,
        timeout_s,
        f"topology {topology_id}: condition met",
        every_s=2.0,
        error=lambda said: DaemonError(f"{said}; last stats {last[0]}"),
    )
