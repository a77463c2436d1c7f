"""The Nimbus IDL (package data) loaded with thriftpy2, with a value hash on GlobalStreamId."""

from __future__ import annotations

from importlib import resources
from typing import Any

import thriftpy2


def _stream_hash(self: Any) -> int:
    return hash((self.componentId, self.streamId))


def _load() -> Any:
    """Load ``nimbus.thrift`` once, under a module name of its own."""
    source = resources.files(__package__).joinpath("nimbus.thrift")
    with resources.as_file(source) as path:
        module = thriftpy2.load(str(path), module_name="stormscale_operator_nimbus_thrift")
    # BoltStats and ComponentCommon.inputs are maps keyed by this struct: decoding them needs a hash
    # that agrees with the struct's value equality, whatever the thriftpy2 version provides.
    module.GlobalStreamId.__hash__ = _stream_hash
    return module


NIMBUS: Any = _load()
