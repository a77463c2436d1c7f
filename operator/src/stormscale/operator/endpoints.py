"""The endpoint policy: which Nimbus endpoints and which Prometheus / Storm UI URLs a StormTopology
may name (the operator's configuration, never the spec's).

Two lists, read once from the environment (the chart's ``endpointPolicy`` values):

* :data:`NIMBUS_ENV`, entries ``host`` or ``host:port`` (``[v6]:port`` for IPv6 literals); without a
  port any port of that host is allowed;
* :data:`URLS_ENV`, entries ``scheme://host[:port][/path]``: a spec URL is allowed when its scheme,
  host and port (the scheme's default when absent, on both sides) are the entry's, and its path is
  the entry's path or below it (``/prom`` allows ``/prom`` and ``/prom/x``, not ``/prometheus``).

Entries are separated by commas or white space. A host is matched by name, case-insensitively, with
a trailing dot ignored: either exactly, or, written ``*.suffix``, any host of one or more labels
under ``suffix`` (``*.storm.svc`` allows ``nimbus.team-a.storm.svc``, not ``storm.svc``). There is
no other wildcard and no regular expression: a match is a comparison and a suffix test, linear in
the lengths (no pattern can be made slow).

The policy matches **names, not addresses**: a name allowed here that resolves (or is re-pointed by
DNS) to another address is contacted at that address. Allow names whose DNS you control.

An empty list leaves its kind open (any endpoint, as without a policy); the operator logs one line
per open kind at startup (:meth:`EndpointPolicy.describe`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from stormscale.storm.errors import redact

NIMBUS_ENV = "STORMSCALE_ALLOWED_NIMBUS"
"""The allowed Nimbus endpoints (chart: ``endpointPolicy.nimbus``)."""
URLS_ENV = "STORMSCALE_ALLOWED_URLS"
"""The allowed Prometheus and Storm UI base URLs (chart: ``endpointPolicy.urls``)."""
DEFAULT_PORTS = {"http": 80, "https": 443}
#: A host as a pattern may spell it: DNS names, IPv4 and (unbracketed) IPv6 literals, one leading ``*.``.
_HOST = re.compile(r"^(\*\.)?[a-z0-9_:.-]+$")


class EndpointPolicyError(ValueError):
    """An entry of the operator's endpoint policy that is not one of the documented forms."""


def normal_host(host: str) -> str:
    """``host`` as compared: lower case, without IPv6 brackets or a trailing dot."""
    return host.strip().lower().removeprefix("[").removesuffix("]").rstrip(".")


@dataclass(frozen=True)
class HostPattern:
    """An exact host, or (``*.suffix``) any host of one or more labels under ``suffix``."""

    text: str

    @classmethod
    def parse(cls, text: str) -> HostPattern:
        host = normal_host(text)
        if not host or not _HOST.match(host) or "*" in host[1:]:
            raise EndpointPolicyError(f"{text!r}: not a host or *.suffix")
        return cls(host)

    def matches(self, host: str) -> bool:
        """``host == text``, or, for ``*.suffix``: ``host`` ends in ``.suffix`` with a label before it."""
        name = normal_host(host)
        if self.text.startswith("*."):
            suffix = self.text[1:]
            return name.endswith(suffix) and len(name) > len(suffix)
        return name == self.text


@dataclass(frozen=True)
class NimbusPattern:
    """``host`` (any port) or ``host:port``."""

    host: HostPattern
    port: int | None

    @classmethod
    def parse(cls, text: str) -> NimbusPattern:
        host, port = text.strip(), None
        if host.startswith("["):  # [v6] or [v6]:port
            inside, closed, rest = host[1:].partition("]")
            if not closed:
                raise EndpointPolicyError(f"{text!r}: an unclosed [")
            host, port_text = inside, rest.removeprefix(":") if rest.startswith(":") else None
            if rest and port_text is None:
                raise EndpointPolicyError(f"{text!r}: not [address] or [address]:port")
        elif host.count(":") == 1:
            host, port_text = host.split(":")
        else:
            port_text = None
        if port_text is not None:
            if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
                raise EndpointPolicyError(f"{text!r}: the port is not a number in [1, 65535]")
            port = int(port_text)
        return cls(HostPattern.parse(host), port)

    def matches(self, host: str, port: int) -> bool:
        return self.host.matches(host) and (self.port is None or self.port == port)


def _url_parts(url: str) -> tuple[str, str, int, str]:
    """``url``'s scheme, host, port (the scheme's default when absent) and path without a final ``/``;
    ``ValueError`` for a URL that has no host or a port that is not a number."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        raise ValueError("not an http(s) URL with a host")
    return scheme, parts.hostname, parts.port or DEFAULT_PORTS[scheme], parts.path.rstrip("/")


@dataclass(frozen=True)
class UrlPattern:
    """``scheme://host[:port][/path]``: that scheme, host and port, and the path or below it."""

    scheme: str
    host: HostPattern
    port: int
    path: str

    @classmethod
    def parse(cls, text: str) -> UrlPattern:
        parts = urlsplit(text.strip())
        if parts.username is not None or parts.query or parts.fragment:
            raise EndpointPolicyError(f"{redact(text)!r}: a URL pattern has no userinfo, query or fragment")
        try:
            scheme, host, port, path = _url_parts(text)
        except ValueError as err:
            raise EndpointPolicyError(f"{text!r}: {err}") from None
        return cls(scheme, HostPattern.parse(host), port, path)

    def matches(self, url: str) -> bool:
        try:
            scheme, host, port, path = _url_parts(url)
        except ValueError:
            return False
        below = path == self.path or path.startswith(self.path + "/")
        return scheme == self.scheme and port == self.port and below and self.host.matches(host)


def _entries(text: str) -> list[str]:
    return [entry for entry in re.split(r"[\s,]+", text) if entry]


@dataclass(frozen=True)
class EndpointPolicy:
    """The allowed Nimbus endpoints and URLs; an empty tuple leaves its kind open."""

    nimbus: tuple[NimbusPattern, ...] = ()
    urls: tuple[UrlPattern, ...] = ()

    @classmethod
    def parse(cls, nimbus: Iterable[str], urls: Iterable[str]) -> EndpointPolicy:
        """The policy of these entries; :class:`EndpointPolicyError` naming the first bad one."""
        return cls(tuple(map(NimbusPattern.parse, nimbus)), tuple(map(UrlPattern.parse, urls)))

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> EndpointPolicy:
        """The policy of :data:`NIMBUS_ENV` and :data:`URLS_ENV` (unset or empty: that kind is open)."""
        try:
            return cls.parse(_entries(env.get(NIMBUS_ENV, "")), _entries(env.get(URLS_ENV, "")))
        except EndpointPolicyError as err:
            raise EndpointPolicyError(f"{NIMBUS_ENV}/{URLS_ENV}: {err}") from None

    def nimbus_allowed(self, host: str, port: int) -> bool:
        return not self.nimbus or any(p.matches(host, port) for p in self.nimbus)

    def url_allowed(self, url: str) -> bool:
        return not self.urls or any(p.matches(url) for p in self.urls)

    def refusal(
        self, nimbus: tuple[str, int], urls: Mapping[str, str | None], placement_port: int | None = None
    ) -> str | None:
        """None when the Nimbus endpoint, the scheduler's placement endpoint on its host (when
        ``placement_port`` is given) and every URL given are allowed; else one line naming each field
        refused and its (redacted) endpoint. ``urls``: spec field → URL (None: not set)."""
        refused = []
        host, port = nimbus
        if not self.nimbus_allowed(host, port):
            refused.append(f"spec.nimbus {redact(f'{host}:{port}')} is not an allowed Nimbus endpoint")
        if placement_port is not None and not self.nimbus_allowed(host, placement_port):
            where = redact(f"{host}:{placement_port}")
            refused.append(f"spec.nimbus.placementPort {where} is not an allowed Nimbus endpoint")
        for field, url in urls.items():
            if url is not None and not self.url_allowed(url):
                refused.append(f"{field} {redact(url)} is not an allowed URL")
        if not refused:
            return None
        return "; ".join(refused) + " (the operator's endpoint policy): nothing was contacted"

    def describe(self) -> list[str]:
        """One line per kind: how many entries it has, or that it is open."""
        return [
            f"endpoint policy: {what} {'open (any allowed)' if not entries else f'{len(entries)} allowed'}"
            + ("" if entries else f"; set {env} to restrict")
            for what, entries, env in (
                ("Nimbus endpoints", self.nimbus, NIMBUS_ENV),
                ("Prometheus and UI URLs", self.urls, URLS_ENV),
            )
        ]
