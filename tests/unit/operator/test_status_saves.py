"""The status as one typed value: intent saved mid-pass, then one patch that leaves nothing stale behind."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from stormscale.operator.handlers import reconcile_and_save
from stormscale.operator.status import StatusError, StormTopologyStatus, status_patch

from .test_reconcile import RESOURCE, T0, policy, world

CRD = Path(__file__).parents[3] / "crds" / "stormtopologies.stormscale.io.yaml"


def stored_after(saves: list[dict[str, Any]], start: Mapping[str, Any]) -> dict[str, Any]:
    """The status the API server stores after these merge patches (None deletes, objects merge)."""
    stored: dict[str, Any] = dict(start)
    for patch in saves:
        for key, value in patch.items():
            if value is None:
                stored.pop(key, None)
            elif isinstance(value, dict) and isinstance(stored.get(key), dict):
                stored[key] = stored_after([value], stored[key])
            else:
                stored[key] = value
    return stored


def test_an_apply_finished_within_its_planning_pass_leaves_no_pending_intent_behind() -> None:
    w = world()  # Storm already runs the baseline, so budget 0 needs no change
    reconcile_and_save(RESOURCE, policy(budget=0), StormTopologyStatus(), w.ports, T0)
    stored = stored_after(w.status.saved, {})
    assert stored["appliedBudget"] == 0
    assert "pending" not in stored  # was written mid-pass as intent, then done in the same pass
    assert stored == w.status.stored  # the patches add up to the status the writer last saw
    reconcile_and_save(RESOURCE, policy(budget=0), StormTopologyStatus.from_json(stored), w.ports, T0)
    assert [e[1] for e in w.events.posted] == ["ScalingApplied"]  # once, not once per pass


def test_a_nested_key_gone_from_the_new_status_is_deleted_not_merged_back() -> None:
    old = {"lastPlan": {"allocation": {"3": 1}, "budget": 1}, "units": {"3": 2}}
    new = {"lastPlan": {"allocation": {"2": 1}, "budget": 2}, "units": {"3": 2}}
    patch = status_patch(old, new)
    assert patch == {"lastPlan": {"allocation": {"3": None, "2": 1}, "budget": 2}}  # units unchanged
    assert stored_after([patch], old) == new


def test_kopf_s_own_status_key_is_left_alone() -> None:
    assert status_patch({"kopf": {"progress": {}}, "units": {"a": 1}}, {}) == {"units": None}


def test_the_status_reads_and_writes_the_crd_s_camel_case() -> None:
    document = {
        "observedGeneration": 3,
        "unitCPU": "500m",
        "appliedBudget": 2,
        "autoscaler": {"desiredBudget": 2, "lastScaleTime": "2026-11-22T12:00:00Z"},
        "kopf": {"dummy": "x"},  # Kopf's own bookkeeping is not ours
    }
    status = StormTopologyStatus.from_json(document)
    assert (status.unit_cpu, status.applied_budget) == ("500m", 2)
    assert status.autoscaler is not None
    assert status.autoscaler.desired_budget == 2
    ours = {k: v for k, v in document.items() if k != "kopf"}
    assert status.to_json() == {**ours, "conditions": []}


def test_a_status_of_the_wrong_shape_is_one_line_naming_the_field() -> None:
    with pytest.raises(StatusError, match=r"^status\.appliedBudget: "):
        StormTopologyStatus.from_json({"appliedBudget": "two"})


def model_fields(model: type[BaseModel]) -> dict[str, Any]:
    """Each field's wire name, with the wire names of a nested model's own fields (None for a leaf)."""
    out: dict[str, Any] = {}
    for name, f in model.model_fields.items():
        # ``X | None`` and ``list[X] | None``: X, one level of generics down
        args = [
            b for a in typing.get_args(f.annotation) or (f.annotation,) for b in typing.get_args(a) or (a,)
        ]
        nested = [a for a in args if isinstance(a, type)]
        inner = next((a for a in nested if issubclass(a, BaseModel)), None)
        out[f.alias or name] = None if inner is None else model_fields(inner)
    return out


def schema_fields(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The same of an openAPI object schema: nested objects with ``properties`` are walked (maps by
    their values, arrays by their items)."""
    out: dict[str, Any] = {}
    for name, prop in schema["properties"].items():
        values = prop.get("additionalProperties")
        inner = values if isinstance(values, Mapping) else prop
        inner = inner.get("items", inner)
        out[name] = schema_fields(inner) if "properties" in inner else None
    return out


def test_the_model_writes_exactly_the_crd_s_status_fields_at_every_depth() -> None:
    """The API server prunes what its structural schema does not name, silently: a field of a nested
    status object (``pending.rebalances``) missing from the CRD would never be stored."""
    crd = yaml.safe_load(CRD.read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    expected = schema_fields(schema)
    expected.pop("kopf")
    assert model_fields(StormTopologyStatus) == expected


def test_the_status_writer_follows_the_current_api_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer cached with the first client would keep its credentials (seen: an admin client from
    one test wrote statuses that the chart's ServiceAccount may not write in the next)."""
    from kubernetes import client

    from stormscale.operator import handlers

    first, second = client.ApiClient(), client.ApiClient()
    monkeypatch.setattr(handlers, "_API", first)
    before = handlers.status_store()
    monkeypatch.setattr(handlers, "_API", second)
    after = handlers.status_store()
    assert before.api is first
    assert after.api is second
    assert before._stored is after._stored  # one memory of what is stored, whatever the client
