"""The hostile-tenant benchmark's fakes and arithmetic (bench/hostile.py): each hostile server, asked
by the operator's real Nimbus client or sample reader, ends the call in the error its behaviour is
meant to cause, quickly; and the table's targets say PASS and FAIL where they should."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

from bench import hostile as bench
from stormscale.operator.status import DEGRADED, PUBLISHED_PROFILE
from stormscale.storm.client import NimbusClient
from stormscale.storm.errors import NimbusUnavailableError
from stormscale.storm.model import Endpoint
from stormscale.storm.samples import (
    Limits,
    PrometheusError,
    PrometheusTooLargeError,
    PrometheusUnavailableError,
    SampleReader,
    Window,
)
from stormscale.storm.wire import MAX_ELEMENTS_ENV
from tests.harness.fakes import hostile

WINDOW = Window(1_700_000_000, 1_700_000_090, 10)


def reader(server: hostile.HostileServer, timeout_s: float = 5.0, **limits: int) -> SampleReader:
    return SampleReader(
        f"http://127.0.0.1:{server.port}", timeout_s=timeout_s, retries=2, limits=Limits(**limits)
    )


def test_a_nimbus_of_empty_structs_is_unavailable_naming_the_element_cap() -> None:
    """Just over the 2,000,000-element cap (the 16 MB frame is bench-hostile's, and test_bounded_io's)."""
    server = hostile.HostileServer(hostile.empty_structs(2_100_000))
    with server, pytest.raises(NimbusUnavailableError, match=MAX_ELEMENTS_ENV):
        NimbusClient(Endpoint("127.0.0.1", server.port), timeout_s=30).topologies()


def test_an_endless_body_is_cut_at_the_byte_cap() -> None:
    server = hostile.HostileServer(hostile.endless_body())
    with server, pytest.raises(PrometheusTooLargeError, match="byte cap"):
        reader(server, max_bytes=1 << 20).newest("t")


@pytest.mark.parametrize("read", ["newest", "range"])
def test_100k_series_are_over_the_series_cap_for_instant_and_range_queries(read: str) -> None:
    with hostile.HostileServer(hostile.many_series(20_001)) as server:
        r = reader(server, max_series=20_000)
        with pytest.raises(PrometheusTooLargeError, match="20,001 series"):
            r.newest("t") if read == "newest" else r.read("t", WINDOW)


def test_a_dripped_body_ends_the_call_at_its_deadline() -> None:
    with hostile.HostileServer(hostile.drip(every_s=0.2)) as server:
        started = time.monotonic()
        with pytest.raises(PrometheusUnavailableError):
            reader(server, timeout_s=1.0).newest("t")
    assert time.monotonic() - started < 10.0  # the whole body would take 20,000 s


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("15", id="15 s"),
        pytest.param("1" + "0" * 30, id="10^30 s"),
        pytest.param("9" * 400, id="400 digits"),
    ],
)
def test_a_retry_after_past_the_deadline_ends_the_call_at_the_first_answer(value: str) -> None:
    """15 s, 10³⁰ s, and a number too large for a float (infinite): one answer, no wait."""
    with hostile.HostileServer(hostile.retry_after(value)) as server:
        started = time.monotonic()
        with pytest.raises(PrometheusUnavailableError, match="retry after"):
            reader(server, timeout_s=5.0).newest("t")
        assert server.connections == 1
    assert time.monotonic() - started < 5.0  # the deadline: no wait was begun


def test_a_result_100k_deep_is_a_prometheus_error() -> None:
    with hostile.HostileServer(hostile.nested()) as server, pytest.raises(PrometheusError):
        reader(server).newest("t")


def test_the_range_query_is_told_from_the_instant_one() -> None:
    assert hostile.is_range_query(b"GET /api/v1/query_range?query=x HTTP/1.1\r\nHost: h\r\n\r\n")
    assert not hostile.is_range_query(b"GET /api/v1/query?query=query_range HTTP/1.1\r\n\r\n")


def resource(kind: str, status: str, reason: str) -> dict[str, Any]:
    return {"status": {"conditions": [{"type": kind, "status": status, "reason": reason}]}}


def test_the_named_reason_is_degraded_true_or_published_profile_false() -> None:
    assert bench.named_reason(resource(DEGRADED, "True", "MetricsTooLarge"), DEGRADED) == "MetricsTooLarge"
    assert bench.named_reason(resource(DEGRADED, "False", "Healthy"), DEGRADED) is None
    invalid = resource(PUBLISHED_PROFILE, "False", "PublishedProfileInvalid")
    assert bench.named_reason(invalid, PUBLISHED_PROFILE) == "PublishedProfileInvalid"
    assert (
        bench.named_reason(resource(PUBLISHED_PROFILE, "True", "PublishedProfileUsed"), PUBLISHED_PROFILE)
        is None
    )
    assert bench.named_reason({"status": None}, DEGRADED) is None


def test_the_published_configmap_is_wrong_only_in_its_profile() -> None:
    from datetime import UTC, datetime

    from stormscale.aggregation import PublishedError, parse_published

    cm = bench.published_configmap("h-x", datetime(2026, 11, 28, 12, tzinfo=UTC))
    assert cm["metadata"]["name"] == "h-x-profile"
    assert cm["data"]["profile.json"] == "[" * 500_000
    with pytest.raises(PublishedError, match=r"profile\.json"):
        parse_published(cm["data"])


def test_vm_lines_are_read_from_the_process_status() -> None:
    status = "Name:\tpython\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n"
    assert bench.vm_kib(status, "VmRSS") == 102400
    assert bench.vm_kib(status, "VmHWM") == 204800
    with pytest.raises(ValueError, match="VmSwap"):
        bench.vm_kib(status, "VmSwap")
    assert bench.max_within([(1.0, 5.0), (2.0, 9.0), (3.0, 7.0)], 2.5, 3.0) == 7.0
    assert math.isnan(bench.max_within([(1.0, 5.0)], 2.0, 3.0))


def window(
    name: str, p99: float, rss: float, named_after_s: float = math.nan, reason: str | None = None
) -> Any:
    w = bench.Window(name, name, 0.0, 1.0, rss_max_mib=rss, hwm_mib=rss, reason=reason)
    w.latencies, w.named_after_s = [p99] * 10, named_after_s
    return w


def test_each_target_fails_alone_and_the_table_says_so() -> None:
    base = window("baseline", 0.1, 100)
    good = window("good", 0.19, 250, 31.0, "MetricsUnavailable")
    fat = window("fat", 0.1, 257, 1.0, "MetricsTooLarge")
    slow = window("slow", 0.21, 100, 1.0, "MetricsTooLarge")
    late = window("late", 0.1, 100, 41.0, "MetricsUnavailable")
    silent = window("silent", 0.1, 100)
    windows = [good, fat, slow, late, silent]
    assert bench.failed(windows, base, 40.0) == [
        "fat: RSS",
        "slow: p99",
        "late: named condition",
        "silent: named condition",
    ]
    rows = bench.table(windows, base, 40.0).splitlines()
    assert rows[2].startswith("| baseline")
    assert rows[3].endswith("| PASS | PASS | PASS |")
    assert "| 1.90 |" in rows[3]
    assert rows[4].endswith("| FAIL | PASS | PASS |")
    assert rows[7].endswith("| PASS | PASS | FAIL |")
    assert "| none |" in rows[7]


def test_every_hostile_behaviour_is_there_and_the_names_are_distinct() -> None:
    assert len(bench.BEHAVIOURS) == 8
    names = {bench.hostile_name(b) for b in bench.BEHAVIOURS}
    assert len(names) == len(bench.BEHAVIOURS)
    assert bench.PASS_DEADLINE_S == 40.0
