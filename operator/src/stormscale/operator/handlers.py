"""Kopf handlers: thin. Parse the spec, run one reconcile pass, write status, map errors.

Run with ``kopf run -m stormscale.operator.handlers --standalone`` (one active writer; see
docs/operator/design.md for peering). Every change of ``spec`` (create, update, resume after a restart) runs
a pass at once; a timer runs one every ``STORMSCALE_INTERVAL_SECONDS`` (default 30) so that
unfinished applies, Auto mode and recovered dependencies converge without a spec change.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import kopf
from kubernetes import client, config

from stormscale.aggregation import use_system_allocator
from stormscale.operator.adapters.kube import (
    GROUP,
    PLURAL,
    REQUEST_TIMEOUT_S,
    VERSION,
    Held,
    KubeConfigMaps,
    KubeDeployments,
    KubePods,
    KubeStatus,
)
from stormscale.operator.adapters.nimbus import NimbusPort
from stormscale.operator.adapters.profiler import prometheus_profiler
from stormscale.operator.adapters.secrets import CredentialsUnavailableError, KubeSecrets, metrics_auth
from stormscale.operator.endpoints import EndpointPolicy, EndpointPolicyError
from stormscale.operator.kept_profiles import FRESHNESS_ENV, PassProfiles, ProfileMemory
from stormscale.operator.metrics import OperatorMetrics, PassEnd, serve
from stormscale.operator.policy import InvalidSpecError, Policy, parse_spec
from stormscale.operator.ports import (
    Events,
    GoneError,
    Ports,
    RefusedError,
    StatusWriter,
    SupersededError,
    UnavailableError,
)
from stormscale.operator.realizer import StormRealizer
from stormscale.operator.reconcile import Outcome, Resource, degraded_pass, reconcile
from stormscale.operator.status import READY, RETRY_WAITING_S, Reason, StatusError, StormTopologyStatus
from stormscale.storm.client import NimbusClient
from stormscale.storm.delivery import PlacementEndpoint
from stormscale.storm.errors import RedactingFilter, forget_secrets, one_line, redact
from stormscale.storm.model import Endpoint
from stormscale.storm.samples.reader import CA_FILE_ENV

INTERVAL_S = float(os.environ.get("STORMSCALE_INTERVAL_SECONDS", "30"))
"""Seconds between two timer passes over each StormTopology (level-based reconciliation)."""
PEERING_IDENTITY_ENV = "STORMSCALE_PEERING_IDENTITY"
"""Set (by the chart, to the pod's name) when replicas meet in Kopf peering: see :func:`peering_priority`."""
PEERING_LIFETIME_ENV = "STORMSCALE_PEERING_LIFETIME_SECONDS"
"""Seconds a replica's peering keepalive is valid (Kopf's ``peering.lifetime``, 60 by default): a standby
takes over at most this long after the active replica dies (chart: ``peering.lifetimeSeconds``)."""
PEERING_LIFETIME_RANGE = (5, 3600)
WORKER_THREADS = int(os.environ.get("STORMSCALE_WORKER_THREADS", "16"))
"""Threads Kopf runs the (synchronous) passes in, and connections the Kubernetes client keeps. A pass
on a silent Nimbus or Prometheus holds its thread until its timeouts end it (10 s per Nimbus call,
30 s per query); Kopf's default, min(32, CPUs + 4), is 6 on two cores: 10 silent endpoints among 200
resources then kept every other timer waiting ~27 s (docs/evaluation.md, "Many resources")."""
METRICS_LISTEN_ENV = "STORMSCALE_METRICS_LISTEN"
"""``host:port`` of the operator's own metrics (docs/operator/reference.md); unset: not served."""
PLACEMENT_TOKEN_ENV = "STORMSCALE_PLACEMENT_TOKEN_FILE"
"""A file holding the bearer token of the scheduler's placement endpoint (unset: no token is sent)."""
METRICS = OperatorMetrics()
PROFILES = ProfileMemory(fresh_s=INTERVAL_S)
"""Each resource's last in-process profile, which a spec pass plans on while it is fresh (at most
``STORMSCALE_PROFILE_FRESHNESS_SECONDS``, by default the timer interval; 0 turns it off)."""
FRESHNESS_RANGE = (0.0, 3600.0)
TIMER_STOP_POLL_S = 1.0
"""How often Kopf checks whether a deleted resource's timer pass has ended (then drops the finalizer)."""
LOG = logging.getLogger("stormscale.operator")
LOG.addFilter(RedactingFilter())  # every line, tracebacks included: no userinfo, no Secret's value

PortsFactory = Callable[[Policy, str, kopf.Body], Ports]


class KopfEvents:
    """``Events`` posted through Kopf on the resource (Kubernetes Events), each also logged, so the
    operator's log tells what it decided without ``kubectl get events``; userinfo of any endpoint in
    a message is redacted (:func:`~stormscale.storm.errors.redact`) in both."""

    def __init__(self, body: kopf.Body) -> None:
        self._body = body
        self._where = f"[{body.metadata.namespace}/{body.metadata.name}]"

    def normal(self, reason: str, message: str) -> None:
        message = redact(message)
        LOG.info("%s %s: %s", self._where, reason, message)
        kopf.event(self._body, type="Normal", reason=reason, message=message)

    def warning(self, reason: str, message: str) -> None:
        message = redact(message)
        LOG.warning("%s %s: %s", self._where, reason, message)
        kopf.event(self._body, type="Warning", reason=reason, message=message)


_API: client.ApiClient | None = None


def kube_api() -> client.ApiClient:
    """One API client per process: in-cluster credentials, else the kubeconfig (``KUBECONFIG``)."""
    global _API  # noqa: PLW0603 - a process-wide client, created lazily
    if _API is None:
        try:
            config.load_incluster_config()
        except config.ConfigException:
            config.load_kube_config()
        configuration = client.Configuration.get_default_copy()  # type: ignore[attr-defined]  # not in the stubs
        configuration.connection_pool_maxsize = WORKER_THREADS  # one connection per pass in flight
        _API = client.ApiClient(configuration)
    return _API


_STORED: dict[tuple[str, str], dict[str, Any]] = {}
"""Each resource's status as this process last loaded or saved it (what the next patch is taken against)."""
_HELD: dict[tuple[str, str], Held] = {}
"""Each resource's version as this process last loaded or saved it (what the next patch is conditional on)."""


def status_store() -> KubeStatus:
    """The status writer on the current API client, with the process's memory of stored statuses."""
    return KubeStatus(kube_api(), _STORED, _HELD)


def placement_endpoint(policy: Policy) -> PlacementEndpoint | None:
    """The scheduler's placement endpoint the spec names (``spec.nimbus.placementPort``), with the
    operator's token file (``STORMSCALE_PLACEMENT_TOKEN_FILE``, the chart mounts it from a Secret)."""
    port = policy.spec.nimbus.placement_port
    if port is None:
        return None
    token = os.environ.get(PLACEMENT_TOKEN_ENV)
    return PlacementEndpoint(port, Path(token) if token else None)


_ENDPOINTS: EndpointPolicy | None = None


def endpoint_policy() -> EndpointPolicy:
    """The operator's endpoint policy, read from the environment once (``EndpointPolicyError`` for
    an entry that is not one of the documented forms)."""
    global _ENDPOINTS  # noqa: PLW0603 - the process's configuration, read lazily
    if _ENDPOINTS is None:
        _ENDPOINTS = EndpointPolicy.from_env()
    return _ENDPOINTS


def announce_endpoint_policy() -> None:
    """Read the endpoint policy at startup and log it, a WARNING per open kind; a bad entry stops
    the operator (:class:`kopf.PermanentError` naming the variable)."""
    try:
        endpoints = endpoint_policy()
    except EndpointPolicyError as err:
        raise kopf.PermanentError(str(err)) from None
    for line in endpoints.describe():
        (LOG.warning if "open" in line else LOG.info)("%s", line)


def endpoint_refusal(policy: Policy) -> str | None:
    """Why the spec's endpoints are refused by the operator's endpoint policy (None: allowed)."""
    spec = policy.spec
    urls = {"spec.metrics.prometheus": spec.metrics.prometheus, "spec.ui.url": spec.ui.url}
    nimbus = (spec.nimbus.host, spec.nimbus.port)
    return endpoint_policy().refusal(nimbus, urls, placement_port=spec.nimbus.placement_port)


def default_ports(policy: Policy, namespace: str, body: kopf.Body) -> Ports:
    """The real ports; the spec's ``metrics.auth`` Secrets are read here
    (:class:`~stormscale.operator.adapters.secrets.CredentialsUnavailableError` when they cannot be)."""
    api = kube_api()
    owner = f"{namespace}/{body.metadata.name}"
    ca_file = os.environ.get(CA_FILE_ENV)
    auth = metrics_auth(policy.spec.metrics.auth, namespace, owner, KubeSecrets(api), ca_file)
    nimbus = NimbusClient(Endpoint(policy.spec.nimbus.host, policy.spec.nimbus.port))
    deployments, storm = KubeDeployments(api), NimbusPort(nimbus, placement_endpoint(policy))
    return Ports(
        deployments=deployments,
        nimbus=storm,
        profiler=prometheus_profiler(
            policy.spec.metrics.prometheus,
            nimbus,
            policy.step_s,
            policy.settle_s,
            workers=(KubePods(api), namespace, policy.spec.workers.deployment),
            pod_overhead_cores=policy.spec.workers.pod_overhead_cores,
            slots_per_pod=policy.spec.workers.slots_per_pod,
            demand=policy.spec.demand(),
            auth=auth,
        ),
        status=status_store(),
        events=KopfEvents(body),
        published=KubeConfigMaps(api),
        realizer=StormRealizer(deployments, storm),
    )


PORTS_FACTORY: PortsFactory = default_ports
"""How handlers build their ports; tests of the Kubernetes side may replace it to inject faults."""


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """In a pod: the service account; elsewhere: the kubeconfig that ``KUBECONFIG`` names now."""
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


def peering_priority(identity: str) -> int:
    """Kopf's peering priority for the replica named ``identity`` (its pod's name): in [1, 2**31).

    Kopf pauses every operator that sees a live peer of a higher *or the same* priority, so replicas
    that share the Deployment's ``--priority`` all pause and none is active. One template cannot give
    each pod its own number; a hash of the pod's name can: stable while the pod lives, different
    between pods (equal for two names with probability 2**-31), and the highest wins. When it dies,
    the others resume once its peering keepalive expires (Kopf's ``peering.lifetime``, 60 s).
    """
    digest = hashlib.sha256(identity.encode()).digest()
    return 1 + int.from_bytes(digest[:4], "big") % (2**31 - 1)


Seconds = TypeVar("Seconds", int, float)


def bounded_setting(
    name: str, text: str, convert: Callable[[str], Seconds], unit: str, bounds: tuple[Seconds, Seconds]
) -> Seconds:
    """An environment setting ``name`` read by ``convert`` (``unit`` names what it must be) and kept
    within ``bounds``; ``ValueError`` naming the variable otherwise."""
    low, high = bounds
    try:
        value = convert(text)
    except ValueError:
        raise ValueError(f"{name}={text!r}: not {unit}") from None
    if not low <= value <= high:
        raise ValueError(f"{name}={value:g}: not in [{low:g}, {high:g}]")
    return value


def peering_lifetime(text: str) -> int:
    """``STORMSCALE_PEERING_LIFETIME_SECONDS`` as whole seconds in :data:`PEERING_LIFETIME_RANGE`."""
    return bounded_setting(
        PEERING_LIFETIME_ENV, text, int, "a whole number of seconds", PEERING_LIFETIME_RANGE
    )


def profile_freshness(text: str) -> float:
    """``STORMSCALE_PROFILE_FRESHNESS_SECONDS`` as seconds in :data:`FRESHNESS_RANGE`."""
    return bounded_setting(FRESHNESS_ENV, text, float, "a number of seconds", FRESHNESS_RANGE)


def set_peering(settings: kopf.OperatorSettings, identity: str | None, lifetime: str | None) -> None:
    """With an identity (peered replicas), Kopf's priority from it; without, Kopf's own (the command
    line's ``--priority`` or 0); with a lifetime, the keepalive's. Runs in the startup handler: after
    the command line, before peering. A bad lifetime raises ``ValueError``."""
    if identity:
        settings.peering.priority = peering_priority(identity)
    if lifetime:
        settings.peering.lifetime = peering_lifetime(lifetime)


def redact_every_handler(root: logging.Logger) -> None:
    """Put the redacting filter on every handler of ``root`` (once): a logger's own filter sees only
    its own records, a handler's sees every record it writes, Kopf's loggers and libraries' included."""
    for handler in root.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    """Kopf tuning, in one place."""
    try:
        set_peering(settings, os.environ.get(PEERING_IDENTITY_ENV), os.environ.get(PEERING_LIFETIME_ENV))
    except ValueError as err:
        raise kopf.PermanentError(str(err)) from None
    freshness = os.environ.get(FRESHNESS_ENV)
    if freshness:
        try:
            PROFILES.fresh_s = profile_freshness(freshness)
        except ValueError as err:
            raise kopf.PermanentError(str(err)) from None
    redact_every_handler(logging.getLogger())  # Kopf configured its handlers before the startup handlers
    # The in-process profile's Arrow buffers come from malloc, whose freed memory MALLOC_ARENA_MAX bounds,
    # not from mimalloc's per-thread pages (docs/operator/reference.md, "Memory").
    LOG.info("Arrow's allocator: %s", use_system_allocator())
    # Keep Kopf's bookkeeping in annotations: our status schema is strict and would refuse Kopf's fields.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="stormscale.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix="stormscale.io", key="last-handled-configuration"
    )
    # Kopf posts its log lines as Events; we post our own, one per decision, and a pass that must be
    # looked at again soon raises TemporaryError (logged at ERROR by Kopf): keep those out of Events.
    settings.posting.level = logging.CRITICAL
    # Watches stall silently on some networks without a server-side timeout (kopf#585).
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    # Kopf's own short calls (events, its annotations) get our adapters' bound, not aiohttp's 5 min.
    settings.networking.connect_timeout = REQUEST_TIMEOUT_S[0]
    settings.networking.request_timeout = sum(REQUEST_TIMEOUT_S)
    # Kopf keeps a finalizer on every resource with a timer and removes it once the timer has stopped;
    # a pass still running when the resource is deleted was looked at again only after Kopf's default
    # 60 s, so `kubectl delete` hung a minute or more (measured on the test bed: 80 s).
    settings.background.cancellation_polling = TIMER_STOP_POLL_S
    settings.execution.max_workers = WORKER_THREADS
    announce_endpoint_policy()
    listen = os.environ.get(METRICS_LISTEN_ENV)
    if listen:
        try:
            host, port = serve(METRICS, listen)
        except (ValueError, OSError) as err:
            raise kopf.PermanentError(f"operator metrics not served: {one_line(err)}") from None
        LOG.info("operator metrics on http://%s:%d/metrics", host, port)


_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _lock_for(uid: str) -> threading.Lock:
    """One lock per resource: Kopf runs timers concurrently with the spec handlers."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(uid, threading.Lock())


def forget_resource(namespace: str, name: str, uid: str) -> None:
    """What the process kept for a deleted resource: its pass lock, its kept profile and the secret
    values its messages were redacted of. Without this, each StormTopology ever created stayed in
    memory until the operator restarted."""
    with _LOCKS_GUARD:
        _LOCKS.pop(uid, None)
    PROFILES.forget(uid)
    forget_secrets(f"{namespace}/{name}")


def run_pass(body: kopf.Body, cause: str = "spec") -> None:
    """One reconcile pass on the resource as stored now.

    Every failure ends as a Degraded condition with a reason (and at most one Warning per change of
    reason); a pass that must be looked at again soon raises :class:`kopf.TemporaryError` with the
    delay its reason calls for, after its status is saved. Each pass logs one INFO line with its
    ``cause`` (the handler: ``spec`` or ``timer``), its duration (from the handler's thread, waiting for
    the resource's lock included) and how it ended, ``[ns/name] timer pass took 0.123 s: Ready True
    Applied`` (bench/fleet.py reads them). A timer pass that finds the resource's pass running is
    skipped (one line, ``timer pass skipped``); a spec pass waits for it. A pass whose resource is no
    longer the one it read (:class:`~stormscale.operator.ports.SupersededError`: a 409 on its status
    write, or deleted, being deleted, created again, a new spec before an act) stops there
    with one INFO line, ``pass stopped``, no condition and no retry of its own: the next pass (the
    timer's, or the new spec's) reads the resource afresh.
    """
    meta = body.metadata
    started = time.monotonic()
    lock = _lock_for(str(meta.uid))
    if not lock.acquire(blocking=cause != "timer"):
        # A pass of this resource runs already (a slow or silent Nimbus or Prometheus) and does what
        # this one would. A timer pass waiting for it held one more of Kopf's few threads per slow
        # resource, and every other resource's timer waited for a thread (bench/fleet.py: 27 s at p99
        # with 10 of 200 endpoints silent). A spec pass waits: it must see the new spec.
        LOG.info("[%s/%s] timer pass skipped: a pass of this resource is running", meta.namespace, meta.name)
        METRICS.record_skip()
        return
    ended = "gone"
    outcome: Outcome | None = None
    try:
        outcome = _run_pass(body, cause)
        ended = pass_end(outcome)
    except SupersededError as err:
        ended = "stopped"
        LOG.info("[%s/%s] %s pass stopped, nothing more done: %s", meta.namespace, meta.name, cause, err)
    except BaseException as err:
        ended = type(err).__name__
        PROFILES.forget(str(meta.uid))
        raise
    finally:
        lock.release()
        took = time.monotonic() - started
        LOG.info("[%s/%s] %s pass took %.3f s: %s", meta.namespace, meta.name, cause, took, ended)
        if outcome is not None and outcome.plan_seconds is not None:
            METRICS.record_plan(outcome.plan_seconds)
        end = PassEnd(str(meta.namespace), str(meta.name), cause, took, ended)
        METRICS.record_pass(end, outcome.status if outcome is not None else None)
    if outcome is not None and outcome.waiting and outcome.retry_after is not None:
        raise kopf.TemporaryError(outcome.summary, delay=outcome.retry_after)


def pass_end(outcome: Outcome | None) -> str:
    """How a pass ended, for its log line: the Ready condition's status and reason (``gone``: the
    resource was deleted meanwhile)."""
    if outcome is None:
        return "gone"
    ready = outcome.status.condition(READY)
    return f"Ready {ready.status} {ready.reason}" if ready else "no Ready condition"


def _run_pass(body: kopf.Body, cause: str = "spec") -> Outcome | None:
    namespace, name, uid = str(body.metadata.namespace), str(body.metadata.name), str(body.metadata.uid)
    store = status_store()
    try:
        fresh = store.load(namespace, name)
    except GoneError:
        PROFILES.forget(uid)
        return None  # deleted meanwhile: only a 404 says so
    except RefusedError as err:
        store.hold(namespace, name, body)  # its status save is conditional on the watch's version
        return _unreadable(body, store, f"cannot read StormTopology {namespace}/{name}: {err}")
    except UnavailableError as err:
        message = f"cannot read StormTopology {namespace}/{name}: {err}"
        raise kopf.TemporaryError(message, delay=RETRY_WAITING_S) from None
    now = datetime.now(UTC)
    resource = Resource(namespace, name, int(fresh["metadata"].get("generation") or 0))

    def refuse(status: StormTopologyStatus, reason: Reason, message: str) -> Outcome:
        deferred = DeferredEvents(KopfEvents(body))
        outcome = degraded_pass(resource, status, reason=reason, message=message, now=now, events=deferred)
        return _save(resource, outcome, store, deferred)

    try:
        status = StormTopologyStatus.from_json(fresh.get("status"))
    except StatusError as err:
        return refuse(StormTopologyStatus(), Reason.INVALID_STATUS, str(err))
    try:
        policy = parse_spec(dict(fresh.get("spec") or {}))
    except InvalidSpecError as err:
        return refuse(status, Reason.INVALID_SPEC, str(err))
    try:
        refused = endpoint_refusal(policy)
        if refused is not None:  # before any port is built: nothing is contacted
            return refuse(status, Reason.ENDPOINT_REFUSED, refused)
        kept = PassProfiles(PROFILES, uid, reuse=cause == "spec")
        ports = dataclasses.replace(PORTS_FACTORY(policy, namespace, body), kept=kept)
        return reconcile_and_save(resource, policy, status, ports, now)
    except CredentialsUnavailableError as err:
        PROFILES.forget(uid)
        return refuse(status, Reason.CREDENTIALS_UNAVAILABLE, str(err))
    except (kopf.TemporaryError, SupersededError):
        raise
    except Exception as err:  # the error contract's last line: a condition and a log, not a bare traceback
        LOG.exception("[%s/%s] reconcile failed", namespace, name)
        PROFILES.forget(uid)
        return refuse(status, Reason.INTERNAL_ERROR, f"{type(err).__name__}: {one_line(err)}")


def _unreadable(body: kopf.Body, store: StatusWriter, message: str) -> Outcome:
    """The API server refuses to read the resource (a 403: RBAC, a webhook): an error, not a deletion.

    ``Degraded/KubernetesRefused`` on the status as the watch last delivered it, where the status can
    still be written, and retried after the reason's delay (RBAC can be mended without a spec change).
    """
    meta = body.metadata
    resource = Resource(
        str(meta.namespace), str(meta.name), int(body.get("metadata", {}).get("generation") or 0)
    )
    try:
        status = StormTopologyStatus.from_json(body.get("status"))
    except StatusError:
        status = StormTopologyStatus()
    outcome = degraded_pass(
        resource,
        status,
        reason=Reason.KUBERNETES_REFUSED,
        message=message,
        now=datetime.now(UTC),
        events=KopfEvents(body),
    )
    return _save(resource, outcome, store)


class DeferredEvents:
    """Events held until the pass's status is saved (then :meth:`flush`).

    Whether an event is due is decided against the stored status (one ScalingApplied per verified
    budget, one Warning per change of reason); posted before a save that fails, the next pass, seeing
    the same stored status, posts it again. A crash between the save and the flush loses the event
    instead: at most once, never twice.
    """

    def __init__(self, events: Events) -> None:
        self._events = events
        self._held: list[tuple[bool, str, str]] = []

    def normal(self, reason: str, message: str) -> None:
        self._held.append((False, reason, message))

    def warning(self, reason: str, message: str) -> None:
        self._held.append((True, reason, message))

    def flush(self) -> None:
        for warning, reason, message in self._held:
            (self._events.warning if warning else self._events.normal)(reason, message)
        self._held.clear()


def reconcile_and_save(
    resource: Resource, policy: Policy, status: StormTopologyStatus, ports: Ports, now: datetime
) -> Outcome:
    """One reconcile pass, then one save of its status (only what changed since the pass's own intent
    save, if it made one), then its events; then, when the topology runs its budget, the profile kept
    for the next spec change is refreshed if it is missing or ageing (the status is already saved)."""
    deferred = DeferredEvents(ports.events)
    outcome = reconcile(resource, policy, status, dataclasses.replace(ports, events=deferred), now)
    saved = _save(resource, outcome, ports.status, deferred)
    if outcome.refresh is not None:
        _refresh(resource, outcome.refresh, ports)
    return saved


def _refresh(resource: Resource, refresh: Callable[[], bool], ports: Ports) -> None:
    """Run ``refresh``; whatever goes wrong only forgets the kept profile (the pass is done)."""
    try:
        refresh()
    except Exception:  # a kept profile is an optimisation: its failure is never the pass's
        LOG.exception("[%s/%s] refreshing the kept profile failed", resource.namespace, resource.name)
        if ports.kept is not None:
            ports.kept.forget()


def _save(
    resource: Resource, outcome: Outcome, writer: StatusWriter, events: DeferredEvents | None = None
) -> Outcome:
    try:
        writer.save(resource.namespace, resource.name, outcome.status)
    except (RefusedError, UnavailableError) as err:
        raise kopf.TemporaryError(f"status not saved: {err}", delay=RETRY_WAITING_S) from None
    if events is not None:
        events.flush()
    return outcome


@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL, field="spec")
@kopf.on.resume(GROUP, VERSION, PLURAL)
def on_spec(*, body: kopf.Body, **_: Any) -> None:
    """A new or changed spec, or the operator restarted: reconcile now."""
    run_pass(body)


@kopf.on.event(GROUP, VERSION, PLURAL)
async def on_event(*, type: str | None, body: kopf.Body, **_: Any) -> None:
    """The watch's raw events: a ``DELETED`` one (the object is gone, finalizers done) forgets it. On
    the event loop, not a worker thread: it only drops a few dictionary entries, and every watch
    event of every resource comes here."""
    if type == "DELETED":
        meta = body.metadata
        forget_resource(str(meta.namespace), str(meta.name), str(meta.uid))


@kopf.timer(GROUP, VERSION, PLURAL, interval=INTERVAL_S, initial_delay=INTERVAL_S)
def on_timer(*, body: kopf.Body, **_: Any) -> None:
    """Level-based pass: finish pending applies, run Auto mode, recover once dependencies are back."""
    run_pass(body, "timer")
