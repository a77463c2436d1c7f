"""``python -m stormscale.storm.exporter --nimbus HOST:PORT [--port 9400] [--listen 127.0.0.1]``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from stormscale.storm.client import NimbusClient
from stormscale.storm.exporter.scraper import Scraper
from stormscale.storm.exporter.server import serve
from stormscale.storm.model import Endpoint


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(prog="stormscale-exporter", description=__doc__)
    parser.add_argument(
        "--nimbus", required=True, help="Nimbus seeds, host:port[,host:port...] (leader found by itself)"
    )
    parser.add_argument("--port", type=int, default=9400, help="HTTP port (0: any free port)")
    parser.add_argument("--listen", default="127.0.0.1", help="address to bind")
    parser.add_argument(
        "--cache-seconds", type=float, default=10.0, help="reuse one Nimbus read for this long"
    )
    parser.add_argument("--timeout", type=float, default=5.0, help="Nimbus call timeout, seconds")
    parser.add_argument("--topology", action="append", default=[], help="only these topologies")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    """Serve until interrupted; print the bound address first."""
    args = parse_args(argv)
    try:
        seeds = [Endpoint.parse(s) for s in args.nimbus.split(",") if s]
    except ValueError as err:
        sys.exit(f"stormscale-exporter: {err}")
    client = NimbusClient(seeds, timeout_s=args.timeout)
    server = serve(Scraper(client, args.cache_seconds, args.topology), args.listen, args.port)
    print(f"stormscale-exporter: serving on http://{args.listen}:{server.server_port}/metrics", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
