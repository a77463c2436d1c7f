"""What the operator's process holds that a pass of a healthy topology does not need: modules imported
at startup (each adds to the RSS of every replica) and per-resource state kept after a deletion."""

from __future__ import annotations

import subprocess
import sys

#: Parquet's reader and writer (pyarrow.parquet, pyarrow.dataset): about 16 MiB of RSS at import, for
#: files only the offline aggregation reads or writes; the operator profiles from in-memory tables.
PARQUET_MODULES = ("pyarrow.parquet", "pyarrow.dataset", "pyarrow._parquet", "pyarrow._dataset")


def test_the_operator_imports_no_parquet_reader_or_writer() -> None:
    probe = (
        "import sys, stormscale.operator.handlers\n"
        f"print(','.join(m for m in {PARQUET_MODULES!r} if m in sys.modules))"
    )
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == ""
