"""Pure parts of the Storm adapter: decoding (with struct map keys), stats, checks, error mapping."""

from __future__ import annotations

import json
from typing import Any

import pytest
from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.thrift import TApplicationException
from thriftpy2.transport import TMemoryBuffer

from stormscale.operator.adapters.errors import port_error
from stormscale.operator.ports import RefusedError, UnavailableError
from stormscale.storm import decode
from stormscale.storm.client import translate
from stormscale.storm.errors import (
    NimbusUnavailableError,
    NotAuthorizedError,
    RequestRejectedError,
    TopologyNotFoundError,
    one_line,
)
from stormscale.storm.idl import NIMBUS
from stormscale.storm.model import (
    ALL_TIME,
    TEN_MINUTES,
    Endpoint,
    Executor,
    Kind,
    RebalanceRequest,
    StreamId,
    WindowStats,
)
from stormscale.storm.stats import capacity, execute_latency_ms, rebalance_problems, weighted_mean

A, B = StreamId("a", "default"), StreamId("b", "s2")
Buffer: Any = TMemoryBuffer  # thriftpy2's transports and protocols are untyped
Binary: Any = TBinaryProtocolFactory


def wire(struct: Any) -> Any:
    """``struct`` written and read back with the binary protocol, as it arrives from Nimbus."""
    out = Buffer()
    struct.write(Binary().get_protocol(out))
    back = type(struct)()
    back.read(Binary().get_protocol(Buffer(out.getvalue())))
    return back


def bolt_summary() -> Any:
    gsid = NIMBUS.GlobalStreamId(componentId="a", streamId="default")
    stats = NIMBUS.BoltStats(
        acked={ALL_TIME: {gsid: 4}},
        failed={ALL_TIME: {gsid: 1}},
        process_ms_avg={TEN_MINUTES: {gsid: 1.5}},
        executed={ALL_TIME: {gsid: 10}, TEN_MINUTES: {gsid: 8}},
        execute_ms_avg={TEN_MINUTES: {gsid: 2.0}},
    )
    executor_stats = NIMBUS.ExecutorStats(
        emitted={ALL_TIME: {"default": 7, "__metrics": 2}},
        transferred={ALL_TIME: {"default": 7}},
        specific=NIMBUS.ExecutorSpecificStats(bolt=stats),
        rate=1.0,
    )
    return NIMBUS.ExecutorSummary(
        executor_info=NIMBUS.ExecutorInfo(3, 4),
        component_id="c",
        host="h",
        port=6700,
        uptime_secs=100,
        stats=executor_stats,
    )


def test_bolt_stats_keyed_by_global_stream_id_decode_from_the_wire() -> None:
    info = wire(
        NIMBUS.TopologyInfo(id="t-1", name="t", uptime_secs=5, executors=[bolt_summary()], status="ACTIVE")
    )
    (executor,) = decode.topology_info(info).executors
    assert (executor.id, executor.tasks, executor.kind) == ("[3-4]", 2, Kind.BOLT)
    assert executor.window(ALL_TIME) == WindowStats(
        emitted={"default": 7, "__metrics": 2},
        transferred={"default": 7},
        acked=4,
        failed=1,
        executed={A: 10},
    )
    assert executor.window(TEN_MINUTES).execute_ms_avg == {A: 2.0}


def test_structure_inputs_keyed_by_global_stream_id_decode_from_the_wire() -> None:
    def common(inputs: dict[Any, Any]) -> Any:
        return NIMBUS.ComponentCommon(inputs=inputs, streams={"default": NIMBUS.StreamInfo(["n"], False)})

    gsid = NIMBUS.GlobalStreamId(componentId="a", streamId="default")
    topology = NIMBUS.StormTopology(
        spouts={"a": NIMBUS.SpoutSpec(common=common({}))},
        bolts={"b": NIMBUS.Bolt(common=common({gsid: NIMBUS.Grouping(fields=["n"])}))},
    )
    structure = decode.topology_structure(wire(topology))
    assert structure.components["b"].inputs == {A: "fields"}
    assert structure.children("a") == ("b",)


def test_every_grouping_decodes_from_the_wire_by_name() -> None:
    def common(inputs: dict[Any, Any]) -> Any:
        return NIMBUS.ComponentCommon(inputs=inputs, streams={"default": NIMBUS.StreamInfo(["n"], False)})

    null = NIMBUS.NullStruct()
    partial = b"\xac\xed\x00\x05sr\x00,org.apache.storm.grouping.PartialKeyGrouping"
    groupings = {
        "fields": NIMBUS.Grouping(fields=["n"]),
        "global": NIMBUS.Grouping(fields=[]),
        "shuffle": NIMBUS.Grouping(shuffle=null),
        "all": NIMBUS.Grouping(all=null),
        "none": NIMBUS.Grouping(none=null),
        "direct": NIMBUS.Grouping(direct=null),
        "local_or_shuffle": NIMBUS.Grouping(local_or_shuffle=null),
        "partial_key": NIMBUS.Grouping(custom_serialized=partial),
        "custom": NIMBUS.Grouping(custom_serialized=b"\xac\xed\x00\x05sr\x00\x0bmy.Grouping"),
    }
    objects = {
        "object_partial": NIMBUS.JavaObject("org.apache.storm.grouping.PartialKeyGrouping", []),
        "object_custom": NIMBUS.JavaObject("my.Grouping", [NIMBUS.JavaObjectArg(string_arg="k")]),
    }
    every = groupings | {name: NIMBUS.Grouping(custom_object=o) for name, o in objects.items()}
    source = NIMBUS.GlobalStreamId("a", "default")
    bolts = {name: NIMBUS.Bolt(common=common({source: g})) for name, g in every.items()}
    topology = NIMBUS.StormTopology(spouts={"a": NIMBUS.SpoutSpec(common=common({}))}, bolts=bolts)
    structure = decode.topology_structure(wire(topology))
    decoded = {name: dict(c.inputs)[A] for name, c in structure.components.items() if name != "a"}
    assert decoded == {name: name for name in groupings} | {
        "object_partial": "partial_key",
        "object_custom": "custom",
    }


def test_the_topology_conf_decodes_from_the_wire_as_a_json_object() -> None:
    conf = {"topology.disable.loadaware.messaging": True, "topology.workers": 2}
    result = NIMBUS.Nimbus.getTopologyConf_result(success=json.dumps(conf))
    assert decode.topology_conf(wire(result).success) == conf


@pytest.mark.parametrize(
    "raw",
    ["[1, 2]", '"conf"', "{not json", "[" * 100_000 + "]" * 100_000, "{" + " " * decode.MAX_CONF_CHARS + "}"],
)
def test_a_topology_conf_that_is_no_bounded_json_object_is_a_value_error(raw: str) -> None:
    with pytest.raises(ValueError, match=r"topology conf|Expecting|delimiter"):
        decode.topology_conf(raw)


def test_an_executor_without_stats_has_empty_windows() -> None:
    summary = NIMBUS.ExecutorSummary(NIMBUS.ExecutorInfo(1, 1), "c", "h", 1, 0, None)
    executor = decode.executor(wire(summary))
    assert executor.kind is None
    assert executor.window(ALL_TIME) == WindowStats()


def test_capacity_is_busy_time_over_min_of_uptime_and_ten_minutes() -> None:
    stats = WindowStats(executed={A: 1000, B: 500}, execute_ms_avg={A: 2.0, B: 4.0})
    assert capacity(stats, 100) == pytest.approx(4000 / 100_000)
    assert capacity(stats, 1200) == pytest.approx(4000 / 600_000)
    assert capacity(stats, 0) == 0.0


def test_latency_is_weighted_by_executed_counts() -> None:
    assert weighted_mean({A: 3, B: 1}, {A: 1.0, B: 5.0}) == pytest.approx(2.0)
    assert weighted_mean({}, {A: 1.0}) == 0.0
    executor = Executor(
        "c", 1, 1, "h", 1, 60, Kind.BOLT, {TEN_MINUTES: WindowStats(executed={A: 2}, execute_ms_avg={A: 3.0})}
    )
    assert execute_latency_ms(executor) == 3.0


def test_rebalance_problems_name_every_bad_component() -> None:
    tasks = {"a": 2, "b": 4}
    assert rebalance_problems(RebalanceRequest(executors={"a": 2, "b": 1}, workers=1), tasks) == []
    problems = rebalance_problems(RebalanceRequest(executors={"a": 3, "b": 0, "x": 1}, workers=0), tasks)
    assert problems == [
        "'a': 3 executors outside 1..2 (its task count)",
        "'b': 0 executors outside 1..4 (its task count)",
        "unknown component 'x' (known: a, b)",
        "0 workers: at least 1 is needed",
    ]


@pytest.mark.parametrize(
    ("err", "kind", "text"),
    [
        (NIMBUS.NotAliveException(msg="t"), TopologyNotFoundError, "topology not alive: t"),
        (NIMBUS.InvalidTopologyException(msg="bad"), RequestRejectedError, "refused by Nimbus: bad"),
        (NIMBUS.AuthorizationException(msg="no"), NotAuthorizedError, "not authorized: no"),
        (
            TApplicationException(6, "not a leader, current leader is n2\n\tat ..."),
            NimbusUnavailableError,
            "not a leader",
        ),
        (ConnectionRefusedError(111, "Connection refused"), NimbusUnavailableError, "cannot reach Nimbus"),
        (TimeoutError("timed out"), NimbusUnavailableError, "timed out"),
    ],
)
def test_errors_become_typed_one_line_messages(err: BaseException, kind: type[Exception], text: str) -> None:
    translated = translate(err, "Nimbus h:1 call")
    assert isinstance(translated, kind)
    assert text in str(translated)
    assert str(translated).startswith("Nimbus h:1 call: ")
    assert "\n" not in str(translated)


def test_port_errors_split_into_retry_and_refuse() -> None:
    assert isinstance(port_error(NimbusUnavailableError("x")), UnavailableError)
    for err in (TopologyNotFoundError("x"), RequestRejectedError("x"), NotAuthorizedError("x")):
        assert isinstance(port_error(err), RefusedError)
        assert not isinstance(port_error(err), UnavailableError)


def test_one_line_keeps_the_first_line_and_shortens() -> None:
    assert one_line("\n  first\nsecond") == "first"
    assert len(one_line("x" * 1000)) == 300


def test_endpoint_parse() -> None:
    assert Endpoint.parse("nimbus.storm:6627") == Endpoint("nimbus.storm", 6627)
    assert Endpoint.parse("nimbus") == Endpoint("nimbus", 6627)
    with pytest.raises(ValueError, match="host:port"):
        Endpoint.parse("nimbus:http")
