"""Published profiles, pure logic: which profile a pass plans on (the fleet job's ConfigMap or the
in-process one), the PublishedProfile condition and its reasons, and that a published profile that
fails a check never causes an action."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from stormscale.aggregation.published import configmap
from stormscale.operator.decision.planning import planning_model, strategy_plans
from stormscale.operator.policy import InvalidSpecError, Policy, ProfileSource, parse_spec
from stormscale.operator.ports import StaleMetricsError, UnavailableError
from stormscale.operator.profiles import document_throughput, judge_published
from stormscale.operator.reconcile import Resource, reconcile
from stormscale.operator.status import StormTopologyStatus
from stormscale.planner import Plan, Topology, load_profile, parse_profile, read_profile
from tests.harness.fakes.ports import FakeCluster, FakeNimbus, FakeProfiler, World

PROFILES = Path(__file__).parents[3] / "examples" / "profiles"
LINEAR = load_profile(PROFILES / "thesis-linear.json")  # the in-process profiler's: 3 is the bottleneck
T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
RESOURCE = Resource("streaming", "linear", generation=1)
WHERE = ("streaming", "linear-profile")
RUNNING = {"1": 1, "2": 1, "3": 1, "4": 1}


def document(**capacities: float) -> dict[str, Any]:
    """The linear topology as the fleet job would publish it (Storm name ``linear``), with its
    confidence; ``capacities`` override bolts' capacity per unit (so that a plan says which profile
    it rests on)."""
    raw: dict[str, Any] = json.loads((PROFILES / "thesis-linear.json").read_text(encoding="utf-8"))
    raw["topology"] = "linear"
    for c in raw["components"]:
        c["confidence"] = {"executedRate": 250.0} if c["id"] == "4" else {}
        if c["id"] == "1":
            c["confidence"]["outputPerUnit"] = {"source": "offered", "throttled": True}
        c["capacityPerUnit"] = capacities.get(c["id"], c.get("capacityPerUnit"))
        if c["capacityPerUnit"] is None:
            del c["capacityPerUnit"]
    raw["confidence"] = {"steady": True, "unstable": [], "notes": []}
    return raw


def data(doc: dict[str, Any] | None = None, *, ended: timedelta = timedelta(hours=1)) -> dict[str, str]:
    """A ConfigMap's data whose window ended ``ended`` before T0."""
    end = T0 - ended
    body = configmap(
        namespace="streaming",
        stormtopology="linear",
        uid="u-1",
        document=doc or document(),
        start=end - timedelta(hours=24),
        end=end,
        computed_at=end + timedelta(minutes=5),
    )
    return dict(body["data"])


def judge(found: dict[str, Any] | None, components: set[str] | None = None, max_age_h: float = 26) -> Any:
    return judge_published(
        found,
        where="streaming/linear-profile",
        topology="linear",
        components=components or set(RUNNING),
        now=T0,
        max_age_s=max_age_h * 3600,
    )


def test_a_fresh_usable_profile_is_used_with_its_window_and_age() -> None:
    verdict = judge(data(ended=timedelta(hours=2)))
    assert verdict.used
    assert verdict.reason == "PublishedProfileUsed"
    assert verdict.profile.source is ProfileSource.PUBLISHED
    assert verdict.profile.age_s == pytest.approx(7200)
    assert verdict.profile.window == "2026-11-21T10:00:00Z/2026-11-22T10:00:00Z"
    assert verdict.profile.throughput == 250.0
    assert verdict.profile.confidence.steady is True
    assert verdict.profile.confidence.of("1").output_source == "offered"
    assert verdict.profile.confidence.of("4").executed_rate == 250.0
    assert [c.id for c in verdict.profile.topology.components] == ["1", "2", "3", "4"]
    assert "computed 2026-11-22T10:05:00Z" in verdict.message


def broken(key: str, value: str) -> dict[str, str]:
    return {**data(), key: value}


def with_doc(change: Any) -> dict[str, str]:
    doc = copy.deepcopy(document())
    change(doc)
    return {**data(), "profile.json": json.dumps(doc)}


FALLBACKS = [
    (None, "PublishedProfileMissing", "no ConfigMap streaming/linear-profile"),
    ({"window": "x"}, "PublishedProfileInvalid", "no profile.json key"),
    (broken("profile.json", '{"topology": "linear", "compo'), "PublishedProfileInvalid", "is not JSON"),
    (broken("profile.json", "[1, 2]"), "PublishedProfileInvalid", "must be a JSON object"),
    (broken("profile.json", "[" * 100_000 + "]" * 100_000), "PublishedProfileInvalid", "nested too deeply"),
    (broken("profile.json", "[" + "7" * 5000 + "]"), "PublishedProfileInvalid", "integer too long"),
    (broken("profile.json", "[" * 500_000), "PublishedProfileInvalid", "over 32 levels"),
    (broken("profile.json", '{"a": "[[[[", "b": ' + "[" * 40), "PublishedProfileInvalid", "over 32 levels"),
    (
        broken("window", "0001-01-01T00:00:00+01:00/2026-11-22T10:00:00Z"),
        "PublishedProfileInvalid",
        "out of range in UTC",
    ),
    (
        broken("window", "9999-12-31T23:00:00-05:00/9999-12-31T23:30:00-05:00"),
        "PublishedProfileInvalid",
        "'9999-12-31T23:00:00-05:00' is out of range",
    ),
    (
        broken("window", "2026-11-21T10:00:00Z/9999-12-31T23:59:59Z"),
        "PublishedProfileInvalid",
        "not between the years",
    ),
    (broken("computedAt", "0001-01-01T00:00:00+01:00"), "PublishedProfileInvalid", "computedAt: '0001"),
    (
        broken("window", "2026-11-21T10:00:00Z/" + "9" * 100_000),
        "PublishedProfileInvalid",
        "window must be '<start>/<end>'",
    ),
    (
        with_doc(lambda d: d["components"][2].update(capacityPerUnit=-1)),
        "PublishedProfileInvalid",
        "capacityPerUnit",
    ),
    (broken("window", "2026-11-21T10:00:00Z"), "PublishedProfileInvalid", "window must be"),
    (broken("window", "2026-11-22T10:00:00Z/2026-11-21T10:00:00Z"), "PublishedProfileInvalid", "ends before"),
    (broken("window", "yesterday/today"), "PublishedProfileInvalid", "not an ISO 8601 time"),
    (broken("computedAt", "soon"), "PublishedProfileInvalid", "computedAt"),
    (with_doc(lambda d: d.update(topology="other")), "PublishedProfileInvalid", "topology 'other', not"),
    (data(ended=timedelta(hours=30)), "PublishedProfileStale", "ended 30h00m ago"),
    (data(ended=-timedelta(hours=2)), "PublishedProfileInvalid", "in the future"),
    (
        with_doc(lambda d: d["confidence"].update(steady=False, unstable=["3"])),
        "PublishedProfileInvalid",
        "3",
    ),
    (with_doc(lambda d: d.pop("confidence")), "PublishedProfileInvalid", "not steady"),
    (with_doc(lambda d: d["components"][0].update(outputPerUnit=0)), "PublishedProfileInvalid", "no flow"),
    (
        with_doc(lambda d: d["components"][0].update(confidence={"outputPerUnit": {"source": "emitted"}})),
        "PublishedProfileInvalid",
        "no demand signal",
    ),
    (with_doc(lambda d: d["components"][0].update(confidence="oops")), "PublishedProfileUsed", ""),
]


@pytest.mark.parametrize(("found", "reason", "says"), FALLBACKS, ids=[f[2] or f[1] for f in FALLBACKS])
def test_every_problem_is_named_and_nothing_bad_is_used(found: Any, reason: str, says: str) -> None:
    verdict = judge(found)
    assert verdict.reason == reason
    assert says in verdict.message
    assert verdict.used == (reason == "PublishedProfileUsed")
    if verdict.used:
        assert verdict.message.startswith("ConfigMap streaming/linear-profile: window 2026-11-21T11:00:00Z/")
    else:
        assert verdict.profile is None
        assert verdict.message.endswith("planning on the in-process profile")


def test_components_must_be_the_running_topology_s() -> None:
    verdict = judge(data(), components={"1", "2", "3", "5"})
    assert verdict.reason == "PublishedProfileInvalid"
    assert "components differ from the running topology's (4, 5)" in verdict.message


def test_a_window_ending_within_the_clock_skew_is_fresh() -> None:
    assert judge(data(ended=-timedelta(minutes=4))).used
    assert judge(data(ended=timedelta(hours=25, minutes=59))).used
    assert not judge(data(ended=timedelta(hours=26, minutes=1))).used


def test_throughput_is_the_sinks_executed_rate_and_ignores_junk() -> None:
    doc = document()
    assert document_throughput(read_profile(doc)) == 250.0
    for junk in ("many", float("nan"), -5.0, 10**400):  # JSON's integers have no bound
        doc["components"][3]["confidence"] = {"executedRate": junk}
        assert document_throughput(read_profile(doc)) == 0.0, junk


# --- the spec --------------------------------------------------------------------------------------


def policy(profile: str | None = "Published", mode: str = "Manual", **metrics: Any) -> Policy:
    chosen = {"profile": profile} if profile else {}
    return parse_spec(
        {
            "topologyName": "linear",
            "nimbus": {"host": "nimbus"},
            "workers": {"deployment": "linear-workers"},
            "metrics": {"prometheus": "http://prometheus:9090", **chosen, **metrics},
            "scaling": {"budget": 2, "flowModel": "Drop", "mode": mode},
        }
    )


def test_the_spec_defaults_to_in_process_and_a_26h_bound() -> None:
    default = policy(None)
    assert default.spec.metrics.profile is ProfileSource.IN_PROCESS
    assert default.published_max_age_s == 26 * 3600
    assert policy(publishedMaxAge="90m").published_max_age_s == 5400


@pytest.mark.parametrize(
    ("metrics", "says"),
    [
        ({"profile": "Spark"}, "spec.metrics.profile"),
        ({"publishedMaxAge": "1d"}, "spec.metrics.publishedMaxAge"),
        ({"publishedMaxAge": "0s"}, "publishedMaxAge must be at least 1s"),
    ],
)
def test_bad_published_settings_are_refused(metrics: dict[str, Any], says: str) -> None:
    with pytest.raises(InvalidSpecError, match=says):
        policy(**metrics)


# --- reconcile ------------------------------------------------------------------------------------


def world(profiler_fails: bool = False) -> World:
    fail = StaleMetricsError("no samples") if profiler_fails else None
    return World(
        FakeCluster(replicas=4),
        FakeNimbus(dict(RUNNING), dict.fromkeys(RUNNING, 8)),
        FakeProfiler(LINEAR, fail=fail),
    )


def run(w: World, p: Policy, status: dict[str, Any] | None = None) -> dict[str, Any]:
    outcome = reconcile(RESOURCE, p, StormTopologyStatus.from_json(status), w.ports, T0)
    return outcome.status.to_json()


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}


def expected_plan(measured: Topology) -> Plan:
    """The plan for budget 2 from the running units on ``measured``."""
    p = policy()
    model = planning_model(measured, RUNNING, dict.fromkeys(RUNNING, 8), p)
    return strategy_plans(model, 2, p)[p.strategy]


# Bolt 2 at 260/s and bolt 3 at 700/s: the published profile's bottleneck is 2, the in-process one's 3.
SHIFTED = {"2": 260.0, "3": 700.0}


def test_published_plans_on_the_config_map_and_never_asks_the_profiler() -> None:
    w = world()
    w.published.data[WHERE] = data(document(**SHIFTED))
    status = run(w, policy())
    assert w.profiler.calls == 0
    assert w.published.calls == [WHERE]
    assert status["lastPlan"]["profileSource"] == "Published"
    assert status["lastPlan"]["profileWindow"] == "2026-11-21T11:00:00Z/2026-11-22T11:00:00Z"
    assert status["lastPlan"]["allocation"].get("2", 0) >= 1  # the published bottleneck gets units
    # the published profile's bottleneck (bolt 2 at 260/s) is the prediction, not the in-process one's (250/s)
    published, in_process = expected_plan(parse_profile(document(**SHIFTED))), expected_plan(LINEAR)
    assert (published.before, in_process.before) == (pytest.approx(260.0), pytest.approx(250.0))
    predicted = status["lastPlan"]["predicted"]
    assert predicted == {"before": pytest.approx(published.before), "after": pytest.approx(published.after)}
    assert status["lastPlan"]["allocation"] == published.allocation != in_process.allocation
    assert status["observed"]["window"] == "2026-11-21T11:00:00Z/2026-11-22T11:00:00Z"
    assert conditions(status)["PublishedProfile"] == ("True", "PublishedProfileUsed")
    assert w.events.posted == []


def test_in_process_plans_name_their_source_and_carry_no_published_condition() -> None:
    w = world()
    w.published.data[WHERE] = data(document(**SHIFTED))
    status = run(w, policy("InProcess"))
    assert w.published.calls == []
    assert w.profiler.calls == 1
    assert status["lastPlan"]["profileSource"] == "InProcess"
    assert "profileWindow" not in status["lastPlan"]
    assert "PublishedProfile" not in conditions(status)
    assert status["lastPlan"]["allocation"] == expected_plan(LINEAR).allocation


def test_a_missing_profile_falls_back_to_in_process_with_the_condition_and_one_warning() -> None:
    w = world()
    status = run(w, policy(mode="Recommend"))
    assert w.profiler.calls == 1
    assert status["lastPlan"]["profileSource"] == "InProcess"
    assert conditions(status)["PublishedProfile"] == ("False", "PublishedProfileMissing")
    assert conditions(status)["Degraded"] == ("False", "Healthy")
    assert [(k, r) for k, r, _ in w.events.posted] == [("Warning", "PublishedProfileMissing")]
    again = run(w, policy(mode="Recommend"), status)  # plans again, falls back again: no second Warning
    assert w.profiler.calls == 2
    assert [(k, r) for k, r, _ in w.events.posted] == [("Warning", "PublishedProfileMissing")]
    assert conditions(again)["PublishedProfile"] == ("False", "PublishedProfileMissing")


def test_a_warning_is_posted_when_the_reason_changes_either_way_and_not_again_for_the_same() -> None:
    """The status goes through JSON between passes (as through the API server: the stored reason is
    a new string, never the enum's own object), and the reason changes both ways: Missing → Invalid
    → Missing (they sort the other way round)."""
    w = world()
    missing = json.loads(json.dumps(run(w, policy(mode="Recommend"))))
    same = json.loads(json.dumps(run(w, policy(mode="Recommend"), missing)))
    w.published.data[WHERE] = broken("profile.json", "{")
    invalid = json.loads(json.dumps(run(w, policy(mode="Recommend"), same)))
    w.published.data.clear()
    run(w, policy(mode="Recommend"), invalid)
    assert [r for _, r, _ in w.events.posted] == [
        "PublishedProfileMissing",
        "PublishedProfileInvalid",
        "PublishedProfileMissing",
    ]


def test_switching_back_to_in_process_drops_the_condition() -> None:
    w = world()
    status = run(w, policy())
    assert "PublishedProfile" in conditions(status)
    w.published.data.clear()
    later = run(world(), policy("InProcess").model_copy(update={"budget": 3}), status)
    assert "PublishedProfile" not in conditions(later)


@pytest.mark.parametrize(
    "found",
    [
        data(ended=timedelta(hours=40)),
        broken("profile.json", "{"),
        with_doc(lambda d: d["confidence"].update(steady=False)),
    ],
    ids=["stale", "malformed", "unsteady"],
)
def test_a_bad_profile_with_no_in_process_one_is_no_action(found: dict[str, str]) -> None:
    w = world(profiler_fails=True)
    w.published.data[WHERE] = found
    status = run(w, policy())
    assert w.journal == []  # no save of an intent, no scale, no rebalance
    assert conditions(status)["Degraded"] == ("True", "StaleMetrics")
    assert conditions(status)["PublishedProfile"][0] == "False"
    assert "lastPlan" not in status


def test_an_unreadable_config_map_falls_back_and_says_so() -> None:
    w = world()
    w.published.fail = UnavailableError("ConfigMap streaming/linear-profile: 503 Service Unavailable")
    status = run(w, policy())
    assert conditions(status)["PublishedProfile"] == ("False", "PublishedProfileUnavailable")
    assert status["lastPlan"]["profileSource"] == "InProcess"


def test_a_name_too_long_for_a_config_map_is_invalid_not_a_crash() -> None:
    w = world()
    long = Resource("streaming", "x" * 250, generation=1)
    outcome = reconcile(long, policy(), StormTopologyStatus(), w.ports, T0)
    reasons = {c.type: c.reason for c in outcome.status.conditions}
    assert reasons["PublishedProfile"] == "PublishedProfileInvalid"
    assert w.published.calls == []


@pytest.mark.parametrize("escape", [RecursionError, OverflowError, MemoryError, ValueError])
def test_any_escape_while_judging_falls_back_with_one_line(
    escape: type[BaseException], monkeypatch: pytest.MonkeyPatch
) -> None:
    def hostile(*_: Any, **__: Any) -> None:
        raise escape("deep inside")

    monkeypatch.setattr("stormscale.operator.profiles.parse_published", hostile)
    verdict = judge(data())
    assert verdict.reason == "PublishedProfileInvalid"
    assert verdict.message.endswith(f"unreadable ({escape.__name__}); planning on the in-process profile")


@pytest.mark.parametrize("escape", [RecursionError, OverflowError, MemoryError])
def test_the_parser_names_any_escape(escape: type[BaseException], monkeypatch: pytest.MonkeyPatch) -> None:
    from stormscale.aggregation.published import PublishedError, parse_published

    def hostile(*_: Any, **__: Any) -> None:
        raise escape("deep inside")

    monkeypatch.setattr("stormscale.aggregation.published.read_profile", hostile)
    with pytest.raises(PublishedError, match=f"unreadable \\({escape.__name__}\\)"):
        parse_published(data())


HOSTILE_CONFIG_MAPS = [
    pytest.param(broken("profile.json", "[" * 500_000), "over 32 levels", id="nested 500,000 deep"),
    pytest.param(
        broken("window", "0001-01-01T00:00:00+01:00/0001-01-01T00:30:00+01:00"),
        "out of range in UTC",
        id="a window in year 1 with an offset",
    ),
]


@pytest.mark.parametrize(("found", "says"), HOSTILE_CONFIG_MAPS)
def test_a_hostile_config_map_falls_back_to_the_in_process_plan_naming_why(found: Any, says: str) -> None:
    w = world()
    w.published.data[WHERE] = found
    status = run(w, policy(mode="Recommend"))
    assert w.profiler.calls == 1
    assert status["lastPlan"]["profileSource"] == "InProcess"
    assert conditions(status)["PublishedProfile"] == ("False", "PublishedProfileInvalid")
    assert conditions(status)["Degraded"] == ("False", "Healthy")
    [(kind, reason, message)] = w.events.posted
    assert (kind, reason) == ("Warning", "PublishedProfileInvalid")
    assert says in message
    assert len(message.splitlines()) == 1
