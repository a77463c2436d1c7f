"""A structural check of a Thrift binary-protocol reply frame, before it is decoded.

The binary protocol describes itself: every field, list, set and map says its element types and
count. A decoder trusts those counts; with an element type that takes no bytes on the wire (``STOP``,
``VOID``, or a code no type has) it loops ``count`` times without reading, so a 42-byte hostile frame
declaring 2³¹ such elements kept thriftpy2's decoder busy for minutes, out of the call deadline's
reach (the deadline is checked on reads). This walk refuses such frames in time linear in their size:

* every element type is one the protocol defines (each takes at least one byte), and
* a container's count is at most the bytes left in the frame (so the walk, and then the decoder,
  consume at least one byte per element, and both end within the frame),
* nesting is at most :data:`MAX_DEPTH` deep (thriftpy2's own limit),
* the frame holds at most ``max_elements`` values (fields, structs, container elements: a 16 MB frame
  of 16 M empty structs took 38.8 s and 2.1 GB to decode), and
* the walk ends by the call's deadline (checked every :data:`DEADLINE_EVERY` values).
"""

from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass

from thriftpy2.thrift import TType

#: thriftpy2's decoder's depth limit (``binary.DEFAULT_MAX_DEPTH``).
MAX_DEPTH = 64
#: Fixed-width types and their sizes in bytes.
FIXED_WIDTH = {TType.BOOL: 1, TType.BYTE: 1, TType.I16: 2, TType.I32: 4, TType.I64: 8, TType.DOUBLE: 8}
CONTAINERS = frozenset({TType.LIST, TType.SET, TType.MAP})
#: Every type an element or a field may have on the wire.
#: Strings and binaries: a 4-byte length, then the bytes.
SIZED = frozenset({TType.STRING, TType.BINARY})
WIRE_TYPES = frozenset(FIXED_WIDTH) | CONTAINERS | SIZED | {TType.STRUCT}
MAX_ELEMENTS_ENV = "STORMSCALE_NIMBUS_MAX_ELEMENTS"
DEFAULT_MAX_ELEMENTS = 2_000_000
"""The most values (fields, structs, list/set/map elements) one Nimbus answer may hold. Sized for the
largest real topology: 500 components and 4,000 executors, whose ``getTopologyInfo`` carries per
executor about 20 fields and, over 4 windows and up to 4 streams, ~8 maps of 16 entries (~300 values):
1.2 M, with room. Decoding stays around a second and a few hundred MB; the 16 M values a 16 MB frame
can hold do not. Environment: :data:`MAX_ELEMENTS_ENV`."""
#: Values walked between two looks at the clock.
DEADLINE_EVERY = 4096
_VERSION_MASK = 0xFFFF0000
_VERSION_1 = 0x80010000


class MalformedFrameError(ValueError):
    """A reply frame whose structure no decoder should be given."""


class TooManyElementsError(MalformedFrameError):
    """A reply frame holding more values than the element cap (:data:`MAX_ELEMENTS_ENV`)."""


def max_elements_from_env() -> int:
    """:data:`MAX_ELEMENTS_ENV` where it is a whole number >= 1, else :data:`DEFAULT_MAX_ELEMENTS`."""
    text = os.environ.get(MAX_ELEMENTS_ENV, "")
    return int(text) if text.isdigit() and int(text) >= 1 else DEFAULT_MAX_ELEMENTS


@dataclass
class _Cursor:
    data: bytes
    at: int = 0
    #: Values still allowed, and the monotonic time by which the walk must end (None: no deadline).
    budget: int = DEFAULT_MAX_ELEMENTS
    deadline: float | None = None
    cap: int = DEFAULT_MAX_ELEMENTS

    def spend(self) -> None:
        """Count one value against the element cap; every :data:`DEADLINE_EVERY`, check the deadline."""
        self.budget -= 1
        if self.budget < 0:
            raise TooManyElementsError(
                f"reply frame holds over {self.cap:,} values, the element cap ({MAX_ELEMENTS_ENV})"
            )
        if (
            self.deadline is not None
            and self.budget % DEADLINE_EVERY == 0
            and time.monotonic() > self.deadline
        ):
            raise TimeoutError("call deadline passed while checking the answer")

    def take(self, size: int) -> bytes:
        if size < 0 or self.at + size > len(self.data):
            raise MalformedFrameError(f"reply frame ends at byte {len(self.data)}, {size} more were needed")
        chunk = self.data[self.at : self.at + size]
        self.at += size
        return chunk

    def i8(self) -> int:
        value: int = self.take(1)[0]
        return value

    def i32(self) -> int:
        value: int = struct.unpack("!i", self.take(4))[0]
        return value

    def count(self) -> int:
        """A container's element count: at most one element per byte left."""
        size = self.i32()
        left = len(self.data) - self.at
        if not 0 <= size <= left:
            raise MalformedFrameError(f"a container of {size:,} elements in a frame with {left:,} bytes left")
        return size


def check_reply_frame(
    payload: bytes, max_elements: int = DEFAULT_MAX_ELEMENTS, deadline: float | None = None
) -> None:
    """Raise :class:`MalformedFrameError` unless ``payload`` (one frame, its length header removed) is
    a strict binary-protocol message whose body walks to its end within the frame, holding at most
    ``max_elements`` values (else :class:`TooManyElementsError`); past ``deadline`` (monotonic
    seconds), :class:`TimeoutError`."""
    cursor = _Cursor(payload, budget=max_elements, deadline=deadline, cap=max_elements)
    version = cursor.i32()
    if version >= 0 or version & _VERSION_MASK != _VERSION_1:
        raise MalformedFrameError(f"reply frame without the protocol's version header ({version:#x})")
    cursor.take(cursor.i32())  # the method's name
    cursor.i32()  # the sequence id
    _walk(cursor, TType.STRUCT, MAX_DEPTH)


def _walk(cursor: _Cursor, ttype: int, depth: int) -> None:
    """Step over one value of wire type ``ttype``."""
    cursor.spend()
    if ttype not in WIRE_TYPES:
        raise MalformedFrameError(f"unknown Thrift type {ttype} at byte {cursor.at}")
    if ttype in FIXED_WIDTH:
        cursor.take(FIXED_WIDTH[ttype])
        return
    if ttype in SIZED:
        cursor.take(cursor.i32())
        return
    if depth <= 0:
        raise MalformedFrameError(f"reply nested over {MAX_DEPTH} levels")
    if ttype == TType.STRUCT:
        while (field := cursor.i8()) != TType.STOP:
            cursor.take(2)  # the field id
            _walk(cursor, field, depth - 1)
    elif ttype == TType.MAP:
        key, value = cursor.i8(), cursor.i8()
        for _ in range(cursor.count()):
            _walk(cursor, key, depth - 1)
            _walk(cursor, value, depth - 1)
    else:
        element = cursor.i8()
        for _ in range(cursor.count()):
            _walk(cursor, element, depth - 1)
