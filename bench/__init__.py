"""Benchmarks (``make bench-*``, ``make accuracy``): each module is run as ``python -m bench.<name>``.

A benchmark stopped by SIGTERM stops as on Ctrl-C: its context managers stop the daemons it started.
"""

from tests.harness.process import interrupt_on_sigterm

interrupt_on_sigterm()
