"""A structural check of a Thrift binary-protocol reply frame, before it is decoded.

The binary protocol describes itself: every field, list, set and map says its element types and
count. A decoder trusts those counts; with an element type that takes no bytes on the wire (``STOP``,
``VOID``, or a code no type has) it loops ``count`` times without reading, so a 42-byte hostile frame
declaring 2³¹ such elements kept thriftpy2's decoder busy for minutes, out of the call deadline's
reach (the deadline is checked on reads). This walk refuses such frames in time linear in their size:

* every element type is one the protocol defines (each takes at least one byte), and
* a container's count is at most the bytes left in the frame (so the walk, and then the decoder,
  consume at least one byte per element, and both end within the frame),
* nesting is at most :data:`MAX_DEPTH` deep (thriftpy2's own limit).
"""

from __future__ import annotations

import struct
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
_VERSION_MASK = 0xFFFF0000
_VERSION_1 = 0x80010000


class MalformedFrameError(ValueError):
    """A reply frame whose structure no decoder should be given."""


@dataclass
class _Cursor:
    data: bytes
    at: int = 0

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


def check_reply_frame(payload: bytes) -> None:
    """Raise :class:`MalformedFrameError` unless ``payload`` (one frame, its length header removed) is
    a strict binary-protocol message whose body walks to its end within the frame."""
    cursor = _Cursor(payload)
    version = cursor.i32()
    if version >= 0 or version & _VERSION_MASK != _VERSION_1:
        raise MalformedFrameError(f"reply frame without the protocol's version header ({version:#x})")
    cursor.take(cursor.i32())  # the method's name
    cursor.i32()  # the sequence id
    _walk(cursor, TType.STRUCT, MAX_DEPTH)


def _walk(cursor: _Cursor, ttype: int, depth: int) -> None:
    """Step over one value of wire type ``ttype``."""
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
