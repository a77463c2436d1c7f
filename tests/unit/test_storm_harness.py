"""Fast checks of the Storm test bed's pure parts: no JVM, no Prometheus, no network."""

from __future__ import annotations

import importlib.util
import json
import re
import zipfile
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.harness.prometheus.server import SD_JOB, StaticJob, scrape_config
from tests.harness.storm.daemons import StormEndpoints, SupervisorLauncher, nimbus_spec
from tests.harness.storm.topology import (
    SHAPES,
    TOPOLOGY_DIR,
    build_topology_jar,
    read_properties,
    topology_properties,
)

PLACEHOLDER = re.compile(r"\$\{([^}]+)\}")


def load_multilang() -> ModuleType:
    """The multilang helper module shipped inside topology jars (not a package of this repo)."""
    path = TOPOLOGY_DIR / "resources" / "stormscale_multilang.py"
    spec = importlib.util.spec_from_file_location("stormscale_multilang", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def endpoints(tmp_path: Path) -> StormEndpoints:
    return StormEndpoints(
        storm_home=str(tmp_path / "home"), run_dir=str(tmp_path), zookeeper_port=1, nimbus_port=2
    )


def test_each_replica_gets_its_own_host_folder_and_slot(endpoints: StormEndpoints) -> None:
    launcher = SupervisorLauncher(endpoints)
    a, b, a_again = launcher("ns-workers-0"), launcher("ns-workers-1"), launcher("ns-workers-0")
    assert a.extra["host"] != b.extra["host"]
    assert a_again.extra["host"] == a.extra["host"], "a restarted replica is the same node"
    assert a.cwd != b.cwd
    conf: dict[str, Any] = json.loads(Path(a.extra["conf"]).read_text())
    assert len(conf["supervisor.slots.ports"]) == 1
    assert conf["storm.local.hostname"] == a.extra["host"]
    assert conf["storm.local.dir"].startswith(str(a.cwd))
    assert conf["topology.stats.sample.rate"] == 1.0
    assert conf["executor.metrics.frequency.secs"] <= 10
    assert f"-Dstorm.conf.file={a.extra['conf']}" in a.argv
    assert a.argv[-1] == "org.apache.storm.daemon.supervisor.Supervisor"


def test_nimbus_runs_stormscales_scheduler_when_the_endpoints_name_its_jar(endpoints: StormEndpoints) -> None:
    spec = nimbus_spec(replace(endpoints, scheduler_jar="/jars/stormscale-scheduler-x.jar"))
    conf: dict[str, Any] = json.loads((endpoints.storm_dir / "nimbus" / "storm.yaml").read_text())
    assert conf["storm.scheduler"] == "io.stormscale.scheduler.PlacementScheduler"
    assert spec.argv[spec.argv.index("-cp") + 1].endswith(":/jars/stormscale-scheduler-x.jar")
    spec = nimbus_spec(endpoints)
    conf = json.loads((endpoints.storm_dir / "nimbus" / "storm.yaml").read_text())
    assert "storm.scheduler" not in conf
    assert "stormscale-scheduler" not in spec.argv[spec.argv.index("-cp") + 1]


def test_a_replica_can_have_more_slots_than_the_launchers_default(endpoints: StormEndpoints) -> None:
    spec = SupervisorLauncher(endpoints)("ns-workers-0", slots=2)
    conf: dict[str, Any] = json.loads(Path(spec.extra["conf"]).read_text())
    assert len(set(conf["supervisor.slots.ports"])) == 2


def test_overrides_replace_defaults_and_unknown_shapes_are_refused() -> None:
    props = topology_properties("linear", {"c1.rate": 7, "topology.name": "x"})
    assert props["c1.rate"] == "7"
    assert props["topology.name"] == "x"
    assert props["max.tasks"] == read_properties(TOPOLOGY_DIR / "linear.properties")["max.tasks"]
    with pytest.raises(ValueError, match="unknown topology shape"):
        topology_properties("star")


@pytest.mark.parametrize("shape", SHAPES)
def test_every_placeholder_has_a_default_and_stands_alone_on_its_line(shape: str) -> None:
    defaults = read_properties(TOPOLOGY_DIR / f"{shape}.properties")
    for number, line in enumerate((TOPOLOGY_DIR / f"{shape}.yaml").read_text().splitlines(), 1):
        keys = PLACEHOLDER.findall(line)
        assert len(keys) <= 1, f"{shape}.yaml:{number}: Flux substitutes only the last placeholder of a line"
        assert all(key in defaults for key in keys), f"{shape}.yaml:{number}: no default for {keys}"


#: The rate spouts' flow-control options: without ``--reliable`` a scenario's ``c1.reliable=1`` is
#: silently ignored, no tuple is tracked and ``topology.max.spout.pending`` bounds nothing (the JVM
#: diamond ran so: its branches then ran each at its own pace, not at the bottleneck's).
FLOW_CONTROL = ("--batch", "--reliable")


RATE_SPOUTS = ("io.stormscale.testbed.RateSpout", "rate_spout.py")
RATE_SPOUT_SHAPES = [
    p for p in sorted(TOPOLOGY_DIR.glob("**/*.yaml")) if any(s in p.read_text() for s in RATE_SPOUTS)
]


@pytest.mark.parametrize("yaml", RATE_SPOUT_SHAPES, ids=lambda p: str(p.relative_to(TOPOLOGY_DIR)))
def test_every_rate_spout_takes_the_flow_control_options(yaml: Path) -> None:
    text = yaml.read_text()
    for option in FLOW_CONTROL:
        assert f'"{option}", "${{c1.{option[2:]}}}"' in text, f"{yaml.name}: the spout lacks {option}"


def test_topology_jar_carries_storm_py_and_the_scripts_under_resources(tmp_path: Path) -> None:
    storm_py = tmp_path / "home" / "multilang" / "resources" / "storm.py"
    storm_py.parent.mkdir(parents=True)
    storm_py.write_text("# stand-in\n")
    jar = build_topology_jar(tmp_path / "home", tmp_path / "topo.jar")
    names = set(zipfile.ZipFile(jar).namelist())
    assert {"resources/storm.py", "resources/rate_spout.py", "resources/cpu_bolt.py"} <= names
    assert "resources/stormscale_multilang.py" in names


def test_stream_chooser_follows_the_weights_exactly() -> None:
    chooser = load_multilang().StreamChooser([("to5", 0.6), ("to6", 0.4)])
    picks = [chooser.next() for _ in range(100)]
    assert picks.count("to5") == 60
    assert picks[:5].count("to5") == 3, "smooth: no long runs of one stream"


def test_fractional_selectivity_carries_over() -> None:
    selectivity = load_multilang().Selectivity(0.25)
    assert [selectivity.outputs() for _ in range(8)] == [0, 0, 0, 1, 0, 0, 0, 1]
    doubling = load_multilang().Selectivity(2.5)
    assert [doubling.outputs() for _ in range(4)] == [2, 3, 2, 3]


def test_task_metrics_render_as_prometheus_text() -> None:
    metrics = load_multilang().Metrics({"topology": "t", "component": "1", "task": "3"})
    metrics.inc("stormscale_tuples_emitted_total", 2, stream="to2")
    metrics.set("stormscale_spout_offered_total", 5, kind="counter")
    metrics.set("stormscale_spout_offered_rate", 2.5)
    families = {f.name: f for f in text_string_to_metric_families(metrics.render())}
    emitted = families["stormscale_tuples_emitted"].samples[0]
    assert emitted.labels == {"topology": "t", "component": "1", "task": "3", "stream": "to2"}
    assert emitted.value == 2
    assert families["stormscale_spout_offered"].type == "counter"
    assert families["stormscale_spout_offered_rate"].samples[0].value == 2.5


def test_scrape_config_has_the_file_sd_job_and_the_static_ones(tmp_path: Path) -> None:
    config = scrape_config([StaticJob("probe", ["127.0.0.1:9"])], tmp_path, 2)
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert jobs[SD_JOB]["file_sd_configs"][0]["files"] == [str(tmp_path / "*.json")]
    assert jobs["probe"]["static_configs"] == [{"targets": ["127.0.0.1:9"]}]
    assert config["global"]["scrape_interval"] == "2s"
