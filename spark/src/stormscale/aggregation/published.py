"""A published profile: the ConfigMap the fleet job (:mod:`stormscale.publish`) writes per StormTopology
and the operator reads (``spec.metrics.profile: Published``). No Kubernetes client here: the document
as a plain object, its name and labels, and the one parser both sides use.

One ConfigMap per StormTopology, ``<stormtopology>-profile`` in the StormTopology's namespace, owned by
it (an owner reference: deleting the StormTopology deletes its profile), labelled
``app.kubernetes.io/managed-by: stormscale`` and ``stormscale.io/stormtopology: <name>``::

    data:
      profile.json     the profile (docs/formats/profile.md) with its ``confidence``
      window           "<start>/<end>": the samples' window, ISO 8601 in UTC (an ISO 8601 interval)
      computedAt       when the job computed it, ISO 8601 in UTC
      confidence.json  the profile's top-level ``confidence`` (steady, unstable, window, notes), for people

The operator judges freshness by the window's *end* (what the numbers describe), not by
``computedAt`` (when a job happened to run): a profile computed today from last week's samples is
last week's.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from stormscale.planner import Profile, ProfileError, Topology, read_profile

PROFILE_KEY = "profile.json"
WINDOW_KEY = "window"
COMPUTED_KEY = "computedAt"
CONFIDENCE_KEY = "confidence.json"
SUFFIX = "-profile"
MANAGED_BY = ("app.kubernetes.io/managed-by", "stormscale")
OWNER_LABEL = "stormscale.io/stormtopology"
#: The API server refuses a ConfigMap above 1 MiB (its data and metadata together).
MAX_BYTES = 1_000_000
_NAME_MAX, _LABEL_MAX = 253, 63
_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
#: A profile document nests objects in arrays in objects a few levels deep; past this it is hostile.
MAX_DEPTH = 32
#: What :func:`nesting_depth` removes before it counts brackets: an escape pair (``\\"``, ``\\\\``, ``\\u``),
#: then a string literal (with no escapes left, its quotes are the delimiters).
_ESCAPE = re.compile(r"\\.", re.DOTALL)
_STRING = re.compile(r'"[^"]*"')
#: Each byte's step in the nesting: +1 for ``[`` and ``{``, −1 for ``]`` and ``}``, 0 for the rest (a
#: UTF-8 byte of a character beyond ASCII is never a bracket's).
_BRACKET_STEP = np.zeros(256, dtype=np.int32)
_BRACKET_STEP[[ord("["), ord("{")]] = 1
_BRACKET_STEP[[ord("]"), ord("}")]] = -1
#: Refused ``profile.json`` texts by their SHA-256: a refused ConfigMap is read again every pass and
#: must not cost its checks again. At most this many are kept (the oldest forgotten first).
REFUSALS_KEPT = 256
_REFUSALS: OrderedDict[tuple[str, bytes], str] = OrderedDict()
_REFUSALS_GUARD = threading.Lock()
#: The years a window or a computation time may name (a year-1 time with an offset overflows).
_YEARS = (1970, 9000)


class PublishedError(ValueError):
    """A published profile that cannot be used; the message is one line naming the problem."""


@dataclass(frozen=True)
class PublishedProfile:
    """A parsed, checked published profile: the document as published and the typed profile
    (:class:`~stormscale.planner.Profile`: the topology and its confidence) read from it."""

    document: dict[str, Any]
    profile: Profile
    start: datetime
    end: datetime
    computed_at: datetime

    @property
    def topology(self) -> Topology:
        return self.profile.topology

    @property
    def window(self) -> str:
        """The window as written: ``<start>/<end>``."""
        return f"{iso(self.start)}/{iso(self.end)}"


def iso(moment: datetime) -> str:
    """UTC, seconds, with a ``Z`` (as Kubernetes writes times)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def configmap_name(stormtopology: str) -> str:
    """``<stormtopology>-profile``; :class:`PublishedError` when that exceeds a ConfigMap name's 253."""
    name = stormtopology + SUFFIX
    if len(name) > _NAME_MAX:
        raise PublishedError(f"StormTopology name {stormtopology!r} is too long for {name!r} (253 at most)")
    return name


def owner_label(stormtopology: str) -> str:
    """The StormTopology's name as a label value: itself when it fits 63 characters, else its first
    characters and 8 hex digits of its SHA-256 (still unique, still a valid label value)."""
    if len(stormtopology) <= _LABEL_MAX and _LABEL_VALUE.match(stormtopology):
        return stormtopology
    digest = hashlib.sha256(stormtopology.encode()).hexdigest()[:8]
    head = re.sub(r"[^-A-Za-z0-9_.]", "-", stormtopology)[: _LABEL_MAX - 9].strip("-_.") or "x"
    return f"{head}-{digest}"


def configmap(
    *,
    namespace: str,
    stormtopology: str,
    uid: str | None,
    document: Mapping[str, Any],
    start: datetime,
    end: datetime,
    computed_at: datetime,
) -> dict[str, Any]:
    """The ConfigMap to apply (server-side) for one StormTopology; ``uid`` makes it an owned object."""
    metadata: dict[str, Any] = {
        "name": configmap_name(stormtopology),
        "namespace": namespace,
        "labels": {MANAGED_BY[0]: MANAGED_BY[1], OWNER_LABEL: owner_label(stormtopology)},
    }
    if uid:
        metadata["ownerReferences"] = [
            {
                "apiVersion": "stormscale.io/v1alpha1",
                "kind": "StormTopology",
                "name": stormtopology,
                "uid": uid,
            }
        ]
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata,
        "data": {
            PROFILE_KEY: json.dumps(document, separators=(",", ":")),
            WINDOW_KEY: f"{iso(start)}/{iso(end)}",
            COMPUTED_KEY: iso(computed_at),
            CONFIDENCE_KEY: json.dumps(document.get("confidence", {}), indent=1),
        },
    }
    size = len(json.dumps(body))
    if size > MAX_BYTES:
        raise PublishedError(f"profile of {stormtopology!r} is {size} bytes; a ConfigMap holds 1 MiB at most")
    return body


def nesting_depth(text: str) -> int:
    """The deepest nesting of ``[`` and ``{`` in JSON ``text`` (strings skipped), without recursion and
    without a Python step per character: escape pairs, then strings removed by regular expressions,
    and the depth the largest running sum of the bytes' steps (+1 open, −1 close, 0 else)::

        depth = max(0, max_k Σ_{i ≤ k} step(byte_i))

    Exact for JSON; a text that is not JSON gets some number and is refused by the parser. A hostile
    ``[`` × 500,000 costs a few milliseconds (a token-by-token loop held the interpreter 0.3 s)."""
    bare = _STRING.sub("", _ESCAPE.sub("", text)).encode(errors="surrogatepass")
    steps = _BRACKET_STEP[np.frombuffer(bare, dtype=np.uint8)]
    return int(np.cumsum(steps).max(initial=0))


def _time(text: str, what: str) -> datetime:
    """An ISO 8601 time in UTC, in the years :data:`_YEARS`; :class:`PublishedError` otherwise."""
    try:
        moment = datetime.fromisoformat(text.strip()[:64])
        moment = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
    except ValueError:
        raise PublishedError(f"{what}: not an ISO 8601 time: {text[:60]!r}") from None
    except OverflowError:  # year 1 at +01:00 is before year 1 in UTC
        raise PublishedError(f"{what}: {text[:60]!r} is out of range in UTC") from None
    if not _YEARS[0] <= moment.year <= _YEARS[1]:
        raise PublishedError(f"{what}: {text[:60]!r} is not between the years {_YEARS[0]} and {_YEARS[1]}")
    return moment


def parse_published(data: Mapping[str, Any], where: str = "published profile") -> PublishedProfile:
    """Check a ConfigMap's ``data`` and parse it; :class:`PublishedError` naming the key otherwise.

    Required: ``profile.json`` (a profile the planner accepts, at most :data:`MAX_BYTES` characters
    and :data:`MAX_DEPTH` levels deep), ``window`` (``start/end`` with ``start ≤ end``, both in the
    years :data:`_YEARS`) and ``computedAt``. ``confidence.json`` is for people and not read. Whatever
    else goes wrong (an arithmetic or memory error on hostile data) is a :class:`PublishedError` too.
    A ``profile.json`` refused once is refused again without being read (:func:`profile_of`).
    """
    try:
        return _parse_published(data, where)
    except PublishedError:
        raise
    except (RecursionError, MemoryError, ArithmeticError, ValueError, TypeError, AttributeError) as err:
        raise PublishedError(f"{where}: unreadable ({type(err).__name__})") from None


def _parse_published(data: Mapping[str, Any], where: str) -> PublishedProfile:
    raw = data.get(PROFILE_KEY)
    if not isinstance(raw, str):
        raise PublishedError(f"{where}: no {PROFILE_KEY} key")
    if len(raw) > MAX_BYTES:
        raise PublishedError(f"{where}: {PROFILE_KEY} holds {len(raw)} characters; at most {MAX_BYTES}")
    document, profile = profile_of(raw, where)
    window = data.get(WINDOW_KEY)
    if not isinstance(window, str) or len(window) > 128 or window.count("/") != 1:
        raise PublishedError(f"{where}: {WINDOW_KEY} must be '<start>/<end>' in ISO 8601")
    start_text, end_text = window.split("/")
    start, end = _time(start_text, f"{where}: {WINDOW_KEY}"), _time(end_text, f"{where}: {WINDOW_KEY}")
    if end < start:
        raise PublishedError(f"{where}: {WINDOW_KEY} ends before it starts")
    computed = data.get(COMPUTED_KEY)
    if not isinstance(computed, str) or len(computed) > 64:
        raise PublishedError(f"{where}: no {COMPUTED_KEY} key")
    return PublishedProfile(document, profile, start, end, _time(computed, f"{where}: {COMPUTED_KEY}"))


def profile_of(raw: str, where: str) -> tuple[dict[str, Any], Profile]:
    """``profile.json``'s document and its typed profile (:func:`read_document`), or the
    :class:`PublishedError` that refused the same text at ``where`` before.

    A refused ConfigMap is read again every pass until someone mends it; a refusal the checks name
    depends on its text alone, so the text's SHA-256 finds it without scanning, parsing or checking it
    again (an error that escapes them, e.g. out of memory, is not kept). At most
    :data:`REFUSALS_KEPT` refusals are kept, the least recently seen forgotten first."""
    key = (where, hashlib.sha256(raw.encode(errors="surrogatepass")).digest())
    with _REFUSALS_GUARD:
        refused = _REFUSALS.get(key)
        if refused is not None:
            _REFUSALS.move_to_end(key)
    if refused is not None:
        raise PublishedError(refused)
    try:
        return read_document(raw, where)
    except PublishedError as err:
        with _REFUSALS_GUARD:
            _REFUSALS[key] = str(err)
            while len(_REFUSALS) > REFUSALS_KEPT:
                _REFUSALS.popitem(last=False)
        raise


def read_document(raw: str, where: str) -> tuple[dict[str, Any], Profile]:
    """``profile.json``'s text as a document at most :data:`MAX_DEPTH` deep and the profile the
    planner reads from it; :class:`PublishedError` otherwise."""
    if nesting_depth(raw) > MAX_DEPTH:
        raise PublishedError(
            f"{where}: {PROFILE_KEY} is not JSON (nested too deeply: over {MAX_DEPTH} levels)"
        )
    try:
        document = json.loads(raw)
    except json.JSONDecodeError as err:
        raise PublishedError(f"{where}: {PROFILE_KEY} is not JSON (line {err.lineno}: {err.msg})") from None
    except RecursionError:  # ``[`` × 100,000: hostile input, not a crash
        raise PublishedError(f"{where}: {PROFILE_KEY} is not JSON (nested too deeply)") from None
    except ValueError:  # an integer beyond Python's 4,300-digit conversion limit
        raise PublishedError(f"{where}: {PROFILE_KEY} is not JSON (integer too long)") from None
    if not isinstance(document, dict):
        raise PublishedError(f"{where}: {PROFILE_KEY} must be a JSON object")
    try:
        profile = read_profile(document)
    except ProfileError as err:
        raise PublishedError(f"{where}: {PROFILE_KEY}: {err}") from None
    return document, profile
