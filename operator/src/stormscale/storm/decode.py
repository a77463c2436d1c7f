"""Thrift objects (from ``idl.NIMBUS``) to the value objects of ``model``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from stormscale.storm.model import (
    ALL_TIME,
    TEN_MINUTES,
    ClusterSummary,
    ComponentAggregate,
    ComponentSpec,
    Endpoint,
    Executor,
    Kind,
    NimbusHost,
    StreamId,
    SupervisorSummary,
    TopologyInfo,
    TopologyPage,
    TopologyStructure,
    TopologySummary,
    WindowStats,
)

GROUPINGS = ("fields", "shuffle", "all", "none", "direct", "local_or_shuffle")
#: Names of the groupings :func:`topology_structure` gives besides :data:`GROUPINGS`: ``global`` (a
#: fields grouping on no field: every tuple to one task), ``partial_key`` (Storm's key grouping split
#: over two tasks, a custom grouping) and ``custom`` (any other).
GLOBAL, PARTIAL_KEY, CUSTOM = "global", "partial_key", "custom"
#: The class of Storm's partial key grouping, as a custom grouping names it.
PARTIAL_KEY_CLASS = "PartialKeyGrouping"
#: The longest topology conf read (characters of its JSON): Storm's defaults alone are about 20 kB.
MAX_CONF_CHARS = 1024 * 1024


def topology_summary(raw: Any) -> TopologySummary:
    """A TopologySummary struct."""
    return TopologySummary(
        raw.id, raw.name, raw.status, raw.num_workers, raw.num_executors, raw.num_tasks, raw.uptime_secs
    )


def cluster_summary(raw: Any) -> ClusterSummary:
    """A ClusterSummary struct."""
    nimbuses = tuple(
        NimbusHost(Endpoint(n.host, n.port), bool(n.isLeader), n.version, n.uptime_secs) for n in raw.nimbuses
    )
    return ClusterSummary(
        nimbuses=nimbuses,
        topologies=tuple(topology_summary(t) for t in raw.topologies),
        supervisors=tuple(
            SupervisorSummary(s.supervisor_id, s.host, s.num_workers, s.num_used_workers, s.uptime_secs)
            for s in raw.supervisors
        ),
    )


def _stream_map(raw: Mapping[Any, Any] | None) -> dict[StreamId, Any]:
    return {StreamId(k.componentId, k.streamId): v for k, v in (raw or {}).items()}


def _window_stats(stats: Any, window: str) -> WindowStats:
    """One window of an ExecutorStats struct."""
    emitted = dict((stats.emitted or {}).get(window, {}))
    transferred = dict((stats.transferred or {}).get(window, {}))
    bolt, spout = stats.specific.bolt, stats.specific.spout
    if bolt is not None:
        return WindowStats(
            emitted=emitted,
            transferred=transferred,
            acked=sum(_stream_map(bolt.acked.get(window)).values()),
            failed=sum(_stream_map(bolt.failed.get(window)).values()),
            executed=_stream_map(bolt.executed.get(window)),
            execute_ms_avg=_stream_map(bolt.execute_ms_avg.get(window)),
            process_ms_avg=_stream_map(bolt.process_ms_avg.get(window)),
        )
    acked = spout.acked.get(window, {}) if spout is not None else {}
    failed = spout.failed.get(window, {}) if spout is not None else {}
    return WindowStats(emitted, transferred, sum(acked.values()), sum(failed.values()))


def _kind(stats: Any) -> Kind | None:
    if stats is None or stats.specific is None:
        return None
    return Kind.BOLT if stats.specific.bolt is not None else Kind.SPOUT


def executor(raw: Any) -> Executor:
    """An ExecutorSummary struct, with every window its stats carry."""
    stats = raw.stats
    windows = (set(stats.emitted or {}) | {ALL_TIME, TEN_MINUTES}) if stats is not None else set()
    return Executor(
        component=raw.component_id,
        task_start=raw.executor_info.task_start,
        task_end=raw.executor_info.task_end,
        host=raw.host,
        port=raw.port,
        uptime_s=raw.uptime_secs,
        kind=_kind(stats),
        windows={w: _window_stats(stats, w) for w in windows},
    )


def topology_info(raw: Any) -> TopologyInfo:
    """A TopologyInfo struct."""
    executors = tuple(sorted((executor(e) for e in raw.executors), key=lambda e: (e.component, e.task_start)))
    return TopologyInfo(raw.id, raw.name, raw.status, raw.uptime_secs, executors, raw.sched_status or "")


def _aggregate(name: str, kind: Kind, raw: Any) -> ComponentAggregate:
    common = raw.common_stats
    specific = raw.specific_stats
    bolt = specific.bolt if specific is not None else None
    spout = specific.spout if specific is not None else None
    return ComponentAggregate(
        component=name,
        kind=kind,
        executors=(common and common.num_executors) or 0,
        tasks=(common and common.num_tasks) or 0,
        emitted=(common and common.emitted) or 0,
        transferred=(common and common.transferred) or 0,
        acked=(common and common.acked) or 0,
        failed=(common and common.failed) or 0,
        executed=(bolt and bolt.executed) or 0,
        capacity=(bolt and bolt.capacity) or 0.0,
        execute_latency_ms=(bolt and bolt.execute_latency_ms) or 0.0,
        process_latency_ms=(bolt and bolt.process_latency_ms) or 0.0,
        complete_latency_ms=(spout and spout.complete_latency_ms) or 0.0,
    )


def topology_page(raw: Any, window: str) -> TopologyPage:
    """A TopologyPageInfo struct (user components only when asked without system components)."""
    spouts = {n: _aggregate(n, Kind.SPOUT, s) for n, s in (raw.id_to_spout_agg_stats or {}).items()}
    bolts = {n: _aggregate(n, Kind.BOLT, s) for n, s in (raw.id_to_bolt_agg_stats or {}).items()}
    return TopologyPage(
        id=raw.id,
        name=raw.name or "",
        status=raw.status or "",
        uptime_s=raw.uptime_secs or 0,
        workers=raw.num_workers or 0,
        window=window,
        components=spouts | bolts,
    )


def _custom_grouping(raw: Any) -> str:
    """``partial_key`` when the custom grouping's class (named in its object, or inside its
    Java-serialized bytes) is Storm's partial key grouping, else ``custom``."""
    named = raw.custom_object.full_class_name if raw.custom_object is not None else ""
    serialized = raw.custom_serialized or b""
    text = serialized.decode("latin-1") if isinstance(serialized, bytes) else str(serialized)
    if PARTIAL_KEY_CLASS in (named or "") or PARTIAL_KEY_CLASS in text:
        return PARTIAL_KEY
    return CUSTOM


def _grouping(raw: Any) -> str:
    if raw.fields is not None and len(raw.fields) == 0:
        return GLOBAL
    named = next((g for g in GROUPINGS if getattr(raw, g, None) is not None), None)
    return named if named is not None else _custom_grouping(raw)


def _component(name: str, kind: Kind, common: Any) -> ComponentSpec:
    inputs = {s: _grouping(g) for s, g in _stream_map(common.inputs).items()}
    return ComponentSpec(name, kind, inputs, tuple(sorted(common.streams or {})), common.parallelism_hint)


def topology_structure(raw: Any) -> TopologyStructure:
    """A StormTopology struct (as submitted: no system components)."""
    spouts = {n: _component(n, Kind.SPOUT, s.common) for n, s in raw.spouts.items()}
    bolts = {n: _component(n, Kind.BOLT, b.common) for n, b in raw.bolts.items()}
    return TopologyStructure(spouts | bolts)


def topology_conf(raw: str) -> dict[str, Any]:
    """The topology's conf (``getTopologyConf``: a JSON object), at most :data:`MAX_CONF_CHARS` long;
    anything else (too long, not JSON, nested too deep, not an object) is a ``ValueError``."""
    if len(raw) > MAX_CONF_CHARS:
        raise ValueError(f"topology conf of {len(raw)} characters, over {MAX_CONF_CHARS}")
    try:
        conf = json.loads(raw)
    except RecursionError:
        raise ValueError("topology conf nested too deep") from None
    if not isinstance(conf, dict):
        raise ValueError(f"topology conf is a JSON {type(conf).__name__}, not an object")
    return conf
