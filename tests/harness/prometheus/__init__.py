"""Prometheus (Debian's package) on a loopback port with a scrape config the tests control; its fixture."""
