"""The JVM Flux files are twins of the multilang ones, and the JVM jar's cache key follows its sources."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness.storm import jvm
from tests.harness.storm.topology import SHAPES, TOPOLOGY_DIR, flux_file, topology_properties

PLACEHOLDER = re.compile(r"\$\{([^}]+)\}")
MULTILANG_ONLY = {"shellbolt.max.pending"}  # topology.shellbolt.max.pending: ShellBolt's own queue
#: The JVM sink may record what it processes (``--seen-dir``, the disruption benchmark's rate); the
#: multilang scripts have no such option.
JVM_ONLY = {"seen.dir"}
JVM_ONLY_OPTIONS = {"--seen-dir"}


def placeholders(path: Path) -> set[str]:
    return set(PLACEHOLDER.findall(path.read_text()))


def loaded(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(PLACEHOLDER.sub("1", path.read_text()))
    return document


def options(component: dict[str, Any]) -> list[str]:
    """The component's ``--name`` options, whatever runs them (``python3 x.py`` or a Java class)."""
    return [arg for arg in component["constructorArgs"][0] if str(arg).startswith("--")]


@pytest.mark.parametrize("shape", SHAPES)
def test_jvm_flux_file_takes_the_multilang_parameters(shape: str) -> None:
    multilang, java = flux_file(shape), flux_file(shape, "jvm")
    assert placeholders(java) - JVM_ONLY == placeholders(multilang) - MULTILANG_ONLY
    assert placeholders(java) <= set(topology_properties(shape, language="jvm"))


@pytest.mark.parametrize("shape", SHAPES)
def test_jvm_flux_file_has_the_same_components_streams_and_options(shape: str) -> None:
    multilang, java = loaded(flux_file(shape)), loaded(flux_file(shape, "jvm"))
    assert java["streams"] == multilang["streams"]
    for kind, cls in (("spouts", "RateSpout"), ("bolts", "CpuBolt")):
        assert [c["id"] for c in java[kind]] == [c["id"] for c in multilang[kind]]
        for ours, theirs in zip(java[kind], multilang[kind], strict=True):
            assert ours["className"] == f"io.stormscale.testbed.{cls}"
            assert [o for o in options(ours) if o not in JVM_ONLY_OPTIONS] == options(theirs)
            assert (ours["parallelism"], ours["numTasks"]) == (theirs["parallelism"], theirs["numTasks"])


def test_jvm_topology_names_differ_from_the_multilang_ones() -> None:
    for shape in SHAPES:
        assert topology_properties(shape, language="jvm")["topology.name"] == f"{shape}-jvm"
    with pytest.raises(ValueError, match="language"):
        flux_file("linear", "scala")


def test_jar_digest_follows_sources_and_storm_version(tmp_path: Path) -> None:
    root = tmp_path / "jvm"
    shutil.copytree(TOPOLOGY_DIR.parent / "jvm", root)
    before = jvm.sources_digest(root)
    assert jvm.sources_digest(root) == before
    assert jvm.sources_digest(root, version="2.8.2") != before
    source = next((root / "src").rglob("CpuBolt.java"))
    source.write_text(source.read_text() + "\n")
    assert jvm.sources_digest(root) != before
    assert jvm.source_files(root)[0].name == "pom.xml"


def test_kafka_linear_is_the_jvm_linear_shape_with_storms_kafka_spout() -> None:
    """Same bolts, streams and parameters as jvm/linear.yaml; "1" is Storm's KafkaSpout, built from a
    KafkaSpoutConfig whose translator emits the field our bolts read; the sink records its keys."""
    kafka, linear = loaded(flux_file("kafka-linear", "jvm")), loaded(flux_file("linear", "jvm"))
    assert kafka["streams"] == linear["streams"]
    (spout,) = kafka["spouts"]
    assert (spout["id"], spout["className"]) == ("1", "org.apache.storm.kafka.spout.KafkaSpout")
    components = {c["id"]: c for c in kafka["components"]}
    assert spout["constructorArgs"] == [{"ref": "spoutConfig"}]
    builder = components[components["spoutConfig"]["constructorArgs"][0]["ref"]]
    assert (builder["className"], builder["factory"]) == (
        "org.apache.storm.kafka.spout.KafkaSpoutConfig",
        "builder",
    )
    methods = {m["name"]: m["args"] for m in builder["configMethods"]}
    assert methods["setProp"][0] == "group.id"
    assert (
        components[methods["setRecordTranslator"][0]["ref"]]["className"]
        == "io.stormscale.testbed.KeyTranslator"
    )
    assert "setProcessingGuarantee" not in methods, "at-least-once is the default: keep it"
    for ours, theirs in zip(kafka["bolts"], linear["bolts"], strict=True):
        extra = ["--seen-dir"] if ours["id"] == "4" else []
        assert options(ours) == [*options(theirs), *extra]
        assert (ours["id"], ours["className"]) == (theirs["id"], theirs["className"])
        assert (ours["parallelism"], ours["numTasks"]) == (theirs["parallelism"], theirs["numTasks"])
    props = topology_properties("kafka-linear", language="jvm")
    assert placeholders(flux_file("kafka-linear", "jvm")) <= set(props)
    assert props["topology.name"] == "kafka-linear-jvm"
    assert props["seen.dir"] == "", "the sink records nothing unless asked"
    assert int(props["topology.ackers"]) >= 1, "at-least-once needs an acker"


def test_kafka_linear_has_no_multilang_twin() -> None:
    with pytest.raises(ValueError, match="JVM components only"):
        flux_file("kafka-linear")
    with pytest.raises(ValueError, match="JVM components only"):
        topology_properties("kafka-linear")


def test_jar_digest_covers_the_kafka_sources() -> None:
    names = {p.name for p in jvm.source_files()}
    assert {"KeyTranslator.java", "CpuBolt.java", "pom.xml"} <= names
