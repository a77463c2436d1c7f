"""The spec model holds every bound the CRD's schema states, at its edge: the edge value is accepted
and the next one past it refused, naming the field. The bounds are read from the CRD itself, so a
bound added to one and not the other fails here (the model must refuse what an older CRD let through).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from stormscale.operator.policy import InvalidSpecError, parse_spec

CRD = Path(__file__).parents[3] / "crds" / "stormtopologies.stormscale.io.yaml"
BOUNDS = ("minimum", "maximum", "minLength", "maxLength", "maxItems")
#: Fields other rules tie to a bounded one, set so that only the bound decides at its edge.
COMPANIONS: dict[str, dict[str, Any]] = {
    "scaling.budget": {"scaling.maxUnits": 1000},
    "scaling.minUnits": {"scaling.maxUnits": 1000},
    "scaling.maxUnits": {"scaling.minUnits": -1000, "scaling.budget": -1000},
    "scaling.targetRate": {"scaling.mode": "Recommend"},
}
#: A Secret reference of ``metrics.auth`` → the other references its object requires.
SECRET_REFS = {
    "bearerToken": (),
    "basic.username": ("basic.password",),
    "basic.password": ("basic.username",),
    "tls.certificate": ("tls.key",),
    "tls.key": ("tls.certificate",),
    "ca": (),
}
for _ref, _others in SECRET_REFS.items():
    # the reference's other half, its object's other references, and https where TLS asks for it
    _needs: dict[str, Any] = {f"metrics.auth.{o}.{k}": "s" for o in _others for k in ("name", "key")}
    if _ref.startswith(("tls", "ca")):
        _needs["metrics.prometheus"] = "https://prometheus:9090"
    for _leaf, _other in (("name", "key"), ("key", "name")):
        COMPANIONS[f"metrics.auth.{_ref}.{_leaf}"] = {f"metrics.auth.{_ref}.{_other}": "s", **_needs}
#: What a list item (and an object within it) needs besides the field under test.
ITEMS: dict[str, dict[str, Any]] = {
    "components[]": {"name": "2"},
    "components[].kafka": {"topic": "t", "consumerGroup": "g"},
    "scaling.lookAhead.schedule.steps[]": {"offset": "0s", "rate": 1},
}
#: The ``i``-th of a list's many items (its maxItems edge).
MANY: dict[str, Callable[[int], dict[str, Any]]] = {
    "components": lambda i: {"name": str(i)},
    "scaling.lookAhead.schedule.steps": lambda i: {"offset": f"{i}s", "rate": 1},
}
#: An object's required fields, set before any field within it is.
CONTAINERS: dict[str, dict[str, Any]] = {
    "scaling.lookAhead.schedule": {"start": "2026-11-22T12:00:00Z", "steps": [{"offset": "0s", "rate": 1}]},
}
TIMESTAMP = "2026-11-22T12:00:00Z"


def base() -> dict[str, Any]:
    return {
        "topologyName": "linear",
        "nimbus": {"host": "nimbus"},
        "workers": {"deployment": "linear-workers"},
        "metrics": {"prometheus": "http://prometheus:9090"},
    }


def spec_schema() -> dict[str, Any]:
    crd = yaml.safe_load(CRD.read_text())
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return dict(schema["properties"]["spec"])


def bounded(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """(dotted path, its schema) of every field with a bound; list items are ``name[]``."""
    if any(b in schema for b in BOUNDS):
        yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from bounded(sub, f"{path}.{name}" if path else name)
    if "items" in schema:
        yield from bounded({k: v for k, v in schema["items"].items() if k not in BOUNDS}, f"{path}[]")


def text(length: int, field: dict[str, Any]) -> str:
    """A string of ``length`` characters that the field's pattern accepts: a URL where it asks one,
    the default behind leading zeros where the pattern is a number's (a duration, a CPU quantity)."""
    pattern = field.get("pattern", "")
    if pattern.startswith("^[0-9]{4}-"):  # an RFC 3339 time: valid at its own length only
        return (TIMESTAMP + "0" * length)[:length]
    if pattern.startswith("^[0-9]"):
        default = str(field.get("default", "1s"))
        return "0" * (length - len(default)) + default
    prefix = "http://" if pattern.startswith("^https?://") else ""
    return prefix + "a" * (length - len(prefix))


def _next_up(x: float) -> float:
    return math.nextafter(float(x), math.inf)


def _next_down(x: float) -> float:
    return math.nextafter(float(x), -math.inf)


def edges(field: dict[str, Any]) -> Iterator[tuple[str, Any, bool]]:
    """(which edge, value, accepted) at each of the field's bounds."""
    kind = field["type"]
    if kind in ("integer", "number"):
        # the next representable value: an integer's neighbour, a float's (math.nextafter)
        up, down = (lambda x: x + 1, lambda x: x - 1) if kind == "integer" else (_next_up, _next_down)
        if "minimum" in field:
            low = field["minimum"]
            if field.get("exclusiveMinimum"):
                yield "exclusive minimum", low, False
                yield "exclusive minimum", up(low), True
            else:
                yield "minimum", low, True
                yield "minimum", down(low), False
        if "maximum" in field:
            high = field["maximum"]
            yield "maximum", high, True
            yield "maximum", up(high), False
    elif kind == "string":
        if "minLength" in field:
            yield "minLength", text(field["minLength"], field), True
            yield "minLength", text(field["minLength"] - 1, field)[: field["minLength"] - 1], False
        if "maxLength" in field:
            yield "maxLength", text(field["maxLength"], field), True
            yield "maxLength", text(field["maxLength"] + 1, field), False
    elif kind == "array":
        yield "maxItems", field["maxItems"], True
        yield "maxItems", field["maxItems"] + 1, False


def with_value(path: str, value: Any) -> dict[str, Any]:
    """The base spec with ``path`` set to ``value`` (and its companions); a list's item is built."""
    spec = copy.deepcopy(base())
    for other, v in COMPANIONS.get(path, {}).items():
        put(spec, other, v)
    for container, fields in CONTAINERS.items():
        if path.startswith(f"{container}."):
            for name, v in fields.items():
                put(spec, f"{container}.{name}", copy.deepcopy(v))
    if path in MANY:
        put(spec, path, [MANY[path](i) for i in range(value)])
    elif "[]." in path:
        listed, _, rest = path.partition("[].")
        item = copy.deepcopy(ITEMS[f"{listed}[]"])
        *parents, leaf = rest.split(".")
        node = item
        for depth, name in enumerate(parents, 1):
            within = ITEMS.get(f"{listed}[]." + ".".join(parents[:depth]), {})
            node = node.setdefault(name, copy.deepcopy(within))
        node[leaf] = value
        put(spec, listed, [item])
    else:
        put(spec, path, value)
    return spec


def put(spec: dict[str, Any], path: str, value: Any) -> None:
    *parents, leaf = path.split(".")
    node = spec
    for p in parents:
        node = node.setdefault(p, {})
    node[leaf] = value


CASES = [
    pytest.param(path, value, accepted, id=f"{path} {edge} {'accepted' if accepted else 'refused'}")
    for path, field in bounded(spec_schema())
    for edge, value, accepted in edges(field)
]


def leaves(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """(dotted path, its schema) of every string and number in the spec; list items are ``name[]``."""
    if schema.get("type") in ("string", "integer", "number"):
        yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from leaves(sub, f"{path}.{name}" if path else name)
    if "items" in schema:
        yield from leaves(schema["items"], f"{path}[]")


def test_every_string_and_number_in_the_spec_is_bounded_in_the_crd() -> None:
    fields = dict(leaves(spec_schema()))
    assert len(fields) >= 30
    unbounded_strings = [
        p for p, f in fields.items() if f["type"] == "string" and not ("enum" in f or "maxLength" in f)
    ]
    unbounded_numbers = [
        p for p, f in fields.items() if f["type"] != "string" and not {"minimum", "maximum"} <= f.keys()
    ]
    assert unbounded_strings == []
    assert unbounded_numbers == []


def test_the_crd_states_the_bounds_this_test_walks() -> None:
    paths = {p for p, _ in bounded(spec_schema())}
    expected = {"nimbus.port", "scaling.budget", "scaling.targetRate", "components", "components[].maxUnits"}
    assert expected <= paths
    assert len(CASES) >= 40


@pytest.mark.parametrize(("path", "value", "accepted"), CASES)
def test_every_crd_bound_holds_at_its_edge(path: str, value: Any, accepted: bool) -> None:
    spec = with_value(path, value)
    if accepted:
        parse_spec(spec)
        return
    leaf = path.rsplit(".", 1)[-1].removesuffix("[]")
    with pytest.raises(InvalidSpecError, match=leaf) as err:
        parse_spec(spec)
    assert len(str(err.value).splitlines()) == 1


@pytest.mark.parametrize(
    ("metrics", "accepted"),
    [
        ({"step": "1s", "window": "5s", "settle": "4s", "maxAge": "1s"}, True),
        ({"step": "0s", "window": "5s", "settle": "4s", "maxAge": "1s"}, False),
        ({"step": "10s", "window": "50s", "settle": "40s"}, True),  # window: exactly 5 steps
        ({"step": "10s", "window": "49s", "settle": "40s"}, False),
        ({"window": "5m", "settle": "299s"}, True),  # settle: just under the window
        ({"step": "10s", "maxAge": "10s"}, True),  # maxAge: exactly one step
        ({"step": "10s", "maxAge": "9s"}, False),
        ({"publishedMaxAge": "1s"}, True),
        ({"publishedMaxAge": "0s"}, False),
        ({"step": "1s", "window": "10999s", "maxAge": "1s"}, True),  # 11,000 points per series
        ({"step": "1s", "window": "11000s", "maxAge": "1s"}, False),
        ({"step": "1s", "window": "11001s", "maxAge": "1s"}, False),
    ],
)
def test_the_metrics_durations_hold_at_their_edges(metrics: dict[str, str], accepted: bool) -> None:
    spec = base()
    spec["metrics"].update(metrics)
    if accepted:
        parse_spec(spec)
    else:
        with pytest.raises(InvalidSpecError, match="metrics"):
            parse_spec(spec)


def test_auto_refuses_a_budget_below_min_units_when_both_are_set_as_the_crd_does() -> None:
    spec = base()
    spec["scaling"] = {"mode": "Auto", "minUnits": 2, "budget": 1}
    below = r"in Auto mode scaling\.budget must not be below scaling\.minUnits"
    with pytest.raises(InvalidSpecError, match=below):
        parse_spec(spec)
    spec["scaling"] = {"mode": "Auto", "minUnits": 2}  # budget left to its default: the CRD lets it through
    parse_spec(spec)
    spec["scaling"] = {"mode": "Auto", "minUnits": 2, "budget": 3}
    parse_spec(spec)
    spec["scaling"] = {"mode": "Manual", "minUnits": 2, "budget": 1}
    parse_spec(spec)


def defaults(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted path, default) of every field outside lists whose schema gives a default."""
    for name, sub in schema.get("properties", {}).items():
        where = f"{path}.{name}" if path else name
        if "default" in sub and sub.get("type") != "object":
            yield where, sub["default"]
        yield from defaults(sub, where)


def test_the_models_defaults_are_the_crds() -> None:
    spec = base()
    spec["scaling"] = {"lookAhead": {}}  # an optional object: its defaults hold once it is given
    dumped = parse_spec(spec).spec.model_dump(by_alias=True)
    found = dict(defaults(spec_schema()))
    assert {"nimbus.port", "scaling.budget", "scaling.maxUnits", "metrics.window"} <= found.keys()
    for path, default in found.items():
        node: Any = dumped
        for key in path.split("."):
            node = node[key]
        assert node == default, f"{path}: the model's default {node!r}, the CRD's {default!r}"


def test_the_points_per_series_count_whole_steps_of_a_window_that_is_not_a_multiple() -> None:
    spec = base()
    # ⌊window / step⌋ + 1 = 11,000 points, the most Prometheus answers
    spec["metrics"].update({"step": "10s", "window": "109999s", "maxAge": "10s"})
    parse_spec(spec)


@pytest.mark.parametrize(
    ("scaling", "accepted"),
    [
        ({"minUnits": 2, "maxUnits": 2, "budget": 2}, True),
        ({"minUnits": 3, "maxUnits": 2, "budget": 2}, False),
        ({"minUnits": -5, "maxUnits": -4, "budget": -4}, True),
        ({"minUnits": -4, "maxUnits": -5, "budget": -5}, False),
    ],
)
def test_min_units_may_equal_max_units_but_not_exceed_it(scaling: dict[str, int], accepted: bool) -> None:
    spec = {**base(), "scaling": scaling}
    if accepted:
        parse_spec(spec)
    else:
        with pytest.raises(InvalidSpecError, match=r"scaling\.minUnits must not exceed scaling\.maxUnits"):
            parse_spec(spec)


def test_of_several_problems_the_message_names_the_first_field() -> None:
    spec = base()
    spec["nimbus"]["port"] = 0
    spec["scaling"] = {"budget": 5000}
    with pytest.raises(InvalidSpecError, match=r"^spec\.nimbus\.port: "):
        parse_spec(spec)


def test_a_parsed_spec_cannot_be_changed_afterwards() -> None:
    policy = parse_spec(base())
    with pytest.raises(ValidationError, match="frozen"):
        policy.spec.scaling.budget = 3


def test_a_window_of_too_many_points_says_how_many() -> None:
    spec = base()
    spec["metrics"].update({"step": "1s", "window": "11001s", "maxAge": "1s"})
    with pytest.raises(InvalidSpecError, match=r"metrics\.window holds 11002 steps of metrics\.step"):
        parse_spec(spec)


HOSTILE = [
    pytest.param("scaling.cooldown", "9" * 5000 + "s", "cooldown", id="cooldown of 5001 characters"),
    pytest.param(
        "scaling.scaleInDelay", "9" * 400 + "h", "scaleInDelay", id="scaleInDelay of 401 characters"
    ),
    pytest.param("scaling.scaleInDelay", "99999999999h", "scaleInDelay", id="scaleInDelay beyond 366 days"),
    pytest.param("metrics.publishedMaxAge", "8785h", "publishedMaxAge", id="publishedMaxAge beyond 366 days"),
    pytest.param("workers.podOverheadCPU", "9" * 400, "podOverheadCPU", id="podOverheadCPU of 400 digits"),
    pytest.param(
        "workers.podOverheadCPU", "1000001m", "podOverheadCPU", id="podOverheadCPU beyond 1000 cores"
    ),
    pytest.param("components[].capacityPerUnit", math.inf, "capacityPerUnit", id="capacityPerUnit inf"),
    pytest.param("components[].capacityPerUnit", math.nan, "capacityPerUnit", id="capacityPerUnit nan"),
    pytest.param("components[].capacityPerUnit", 1e300, "capacityPerUnit", id="capacityPerUnit 1e300"),
]


@pytest.mark.parametrize(("path", "value", "field"), HOSTILE)
def test_a_hostile_spec_past_the_crd_is_refused_in_one_line_naming_the_field(
    path: str, value: Any, field: str
) -> None:
    with pytest.raises(InvalidSpecError, match=field) as err:
        parse_spec(with_value(path, value))
    assert len(str(err.value).splitlines()) == 1
    assert len(str(err.value)) < 600


def test_the_longest_durations_are_accepted() -> None:
    spec = with_value("scaling.scaleInDelay", "8784h")
    spec["scaling"]["cooldown"] = "31622400s"
    policy = parse_spec(spec)
    assert policy.scale_in_delay_s == policy.cooldown_s == 366 * 24 * 3600


@pytest.mark.parametrize("escape", [RecursionError, OverflowError, MemoryError, ValueError])
def test_any_escape_while_parsing_is_an_invalid_spec(
    escape: type[BaseException], monkeypatch: pytest.MonkeyPatch
) -> None:
    def hostile(*_: Any, **__: Any) -> None:
        raise escape("deep inside")

    monkeypatch.setattr("stormscale.operator.policy.parse_duration", hostile)
    with pytest.raises(InvalidSpecError, match="spec"):
        parse_spec(base())


@pytest.mark.parametrize("sample", sorted((CRD.parent / "samples").glob("*.yaml")), ids=lambda p: p.name)
def test_every_sample_resource_is_a_valid_spec(sample: Path) -> None:
    for document in yaml.safe_load_all(sample.read_text()):
        parse_spec(document["spec"])
