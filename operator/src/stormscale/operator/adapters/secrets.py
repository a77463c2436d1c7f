"""Prometheus credentials from Secrets: the spec's ``metrics.auth`` read through the API server.

Each pass reads the Secrets it names (in the StormTopology's namespace) and turns them into a
:class:`~stormscale.storm.samples.fetch.Auth`: an ``Authorization`` header (``Bearer <token>`` or
``Basic base64(username:password)``) and a TLS context (client certificate and key, CA bundle). A
Secret or key that is missing, unreadable or unusable is :class:`CredentialsUnavailableError`,
naming the field, the Secret and the key, never a value. Every value read is registered with
:func:`~stormscale.storm.errors.register_secrets`, so that :func:`~stormscale.storm.errors.redact`
(conditions, events, the operator's log) hides it wherever it might be quoted.
"""

from __future__ import annotations

import base64
import ssl
from collections.abc import Mapping
from typing import Protocol

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from stormscale.operator.adapters.kube import REQUEST_TIMEOUT_S
from stormscale.operator.policy import MetricsAuthSpec, SecretKeyRef
from stormscale.storm.errors import register_secrets
from stormscale.storm.samples.fetch import Auth, tls_context


class CredentialsUnavailableError(RuntimeError):
    """A Secret or key ``metrics.auth`` names is missing, refused or unusable (the message names the
    field, the Secret and the key; never a value)."""


class SecretsReader(Protocol):
    def data(self, namespace: str, name: str) -> Mapping[str, bytes] | None:
        """The Secret's data, decoded (None: no such Secret). Raises
        :class:`CredentialsUnavailableError` when it cannot be read."""


class KubeSecrets:
    """Secrets through the API server (the operator's RBAC: ``secrets: get``)."""

    def __init__(self, api: client.ApiClient) -> None:
        self._core = client.CoreV1Api(api)

    def data(self, namespace: str, name: str) -> Mapping[str, bytes] | None:
        try:
            secret = self._core.read_namespaced_secret(name, namespace, _request_timeout=REQUEST_TIMEOUT_S)
        except ApiException as err:
            if err.status == 404:
                return None
            hint = " (the operator's RBAC needs secrets: get here)" if err.status == 403 else ""
            raise CredentialsUnavailableError(
                f"Secret {namespace}/{name} not read: {err.status} {err.reason}{hint}"
            ) from None
        except urllib3.exceptions.HTTPError as err:
            raise CredentialsUnavailableError(
                f"Secret {namespace}/{name} not read: {type(err).__name__}"
            ) from None
        return {key: base64.b64decode(value) for key, value in (secret.data or {}).items()}


def _value(secrets: SecretsReader, namespace: str, field: str, ref: SecretKeyRef) -> bytes:
    """The bytes under ``ref``'s key; :class:`CredentialsUnavailableError` naming ``field`` otherwise."""
    try:
        data = secrets.data(namespace, ref.name)
    except CredentialsUnavailableError as err:
        raise CredentialsUnavailableError(f"{field}: {err}") from None
    if data is None:
        raise CredentialsUnavailableError(f"{field}: Secret {namespace}/{ref.name} not found")
    if ref.key not in data:
        raise CredentialsUnavailableError(f"{field}: Secret {namespace}/{ref.name} has no key {ref.key!r}")
    return data[ref.key]


def header_text(raw: bytes, field: str, ref: SecretKeyRef) -> str:
    """``raw`` as header text: UTF-8 without the surrounding white space (a Secret made from a file
    ends in a newline), and no control character left inside (:mod:`http.client` would refuse the
    header and quote it in its error)."""
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        text = ""
    if not text or not text.isprintable():
        raise CredentialsUnavailableError(
            f"{field}: Secret key {ref.name}/{ref.key} is empty, not UTF-8 or holds control characters"
        )
    return text


def authorization(
    auth: MetricsAuthSpec, namespace: str, secrets: SecretsReader
) -> tuple[str | None, list[str]]:
    """The ``Authorization`` value the spec asks for (None: none), and the secret texts it holds."""
    if auth.bearer_token is not None:
        field, ref = "spec.metrics.auth.bearerToken", auth.bearer_token
        token = header_text(_value(secrets, namespace, field, ref), field, ref)
        return f"Bearer {token}", [token]
    if auth.basic is not None:
        field = "spec.metrics.auth.basic"
        user_ref, password_ref = auth.basic.username, auth.basic.password
        user = header_text(_value(secrets, namespace, f"{field}.username", user_ref), field, user_ref)
        password = header_text(
            _value(secrets, namespace, f"{field}.password", password_ref), field, password_ref
        )
        if ":" in user:
            raise CredentialsUnavailableError(f"{field}.username: a username must not hold ':'")
        pair = base64.b64encode(f"{user}:{password}".encode()).decode()
        return f"Basic {pair}", [password, pair]
    return None, []


def metrics_auth(
    auth: MetricsAuthSpec | None,
    namespace: str,
    owner: str,
    secrets: SecretsReader,
    ca_file: str | None = None,
) -> Auth | None:
    """The credentials ``auth`` names, read now (None: the spec names none). The secret texts are
    registered for ``owner`` (the resource's ``namespace/name``) before anything can quote them."""
    if auth is None:
        register_secrets(owner, ())
        return None
    header, texts = authorization(auth, namespace, secrets)
    register_secrets(owner, texts)
    context = None
    if auth.tls is not None or auth.ca is not None:
        ca = None if auth.ca is None else _value(secrets, namespace, "spec.metrics.auth.ca", auth.ca)
        certificate = key = None
        if auth.tls is not None:
            field = "spec.metrics.auth.tls"
            certificate = _value(secrets, namespace, f"{field}.certificate", auth.tls.certificate)
            key = _value(secrets, namespace, f"{field}.key", auth.tls.key)
        try:
            context = tls_context(ca, certificate, key, ca_file)
        except (ssl.SSLError, ValueError) as err:
            what = (
                "the CA bundle" if certificate is None else "the client certificate, its key or the CA bundle"
            )
            reason = getattr(err, "reason", None) or type(err).__name__
            raise CredentialsUnavailableError(
                f"spec.metrics.auth: {what} is not usable PEM ({reason})"
            ) from None
    return Auth(header, context)
