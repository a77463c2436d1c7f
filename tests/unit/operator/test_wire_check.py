"""The structural check of Nimbus's reply frames (stormscale.storm.wire): real replies pass, frames
that would keep a decoder looping without reading are refused at once."""

from __future__ import annotations

import struct
import time
from typing import Any

import pytest
from thriftpy2.thrift import TMessageType, TType

from stormscale.storm.idl import NIMBUS
from stormscale.storm.wire import MAX_DEPTH, MalformedFrameError, check_reply_frame
from tests.unit.operator.test_fuzz_responses import reply_frame
from tests.unit.operator.test_storm_pure import bolt_summary

HEADER = struct.pack("!iI", -0x7FFEFFFE, 4) + b"call" + struct.pack("!i", 0)  # version 1, REPLY


def payload(frame: bytes) -> bytes:
    """A frame without its 4-byte length."""
    return frame[4:]


def topology_info(executors: int) -> Any:
    return NIMBUS.Nimbus.getTopologyInfoByNameWithOpts_result(
        success=NIMBUS.TopologyInfo(
            id="t-1", name="t", uptime_secs=60, executors=[bolt_summary()] * executors, status="ACTIVE"
        )
    )


def test_a_real_reply_passes_whole_and_is_refused_cut_short() -> None:
    frame = payload(reply_frame("getTopologyInfoByNameWithOpts", topology_info(3)))
    check_reply_frame(frame)
    with pytest.raises(MalformedFrameError, match="ends at byte"):
        check_reply_frame(frame[:-2])


def test_the_frame_that_kept_thriftpy2_busy_for_minutes_is_refused_at_once() -> None:
    """A list of element type STOP (no bytes each) declaring 201,326,592 elements: 42 bytes that kept
    thriftpy2's pure decoder in ``skip`` for 53-118 s (found by the fuzz test)."""
    frame = bytes.fromhex("80010002") + struct.pack("!i", 20) + b"getTopologySummaries"
    frame += struct.pack("!i", 0) + b"\x0f\x00\x00" + b"\x00" + struct.pack("!i", 0x0C000000) + b"\x00"
    started = time.monotonic()
    with pytest.raises(MalformedFrameError, match="201,326,592 elements"):
        check_reply_frame(frame)
    assert time.monotonic() - started < 0.1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"\x0f\x00\x00" + bytes([TType.VOID]) + struct.pack("!i", 1) + b"\x00", "unknown Thrift type 1"),
        (b"\x0d\x00\x00" + bytes([TType.I32, 0x55]) + struct.pack("!i", 1) + b"\x00" * 5, "type 85"),
        (b"\x0f\x00\x00" + bytes([TType.BYTE]) + struct.pack("!i", -1) + b"\x00", "of -1 elements"),
        (b"\x0f\x00\x00" + bytes([TType.BYTE]) + struct.pack("!i", 9) + b"\x00" * 3, "9 elements"),
        (b"\x0b\x00\x01" + struct.pack("!i", 2**30) + b"ab\x00", "ends at byte"),
    ],
)
def test_containers_of_types_without_bytes_or_beyond_the_frame_are_refused(body: bytes, message: str) -> None:
    with pytest.raises(MalformedFrameError, match=message):
        check_reply_frame(HEADER + body)


def test_nesting_deeper_than_the_decoder_allows_is_refused() -> None:
    def nested(levels: int) -> bytes:
        return b"\x0c\x00\x01" * levels + b"\x00" * (levels + 1)

    check_reply_frame(HEADER + nested(MAX_DEPTH - 1))
    with pytest.raises(MalformedFrameError, match="nested over"):
        check_reply_frame(HEADER + nested(MAX_DEPTH))


def test_a_frame_without_the_version_header_is_refused() -> None:
    frame = payload(reply_frame("getClusterInfo", NIMBUS.Nimbus.getClusterInfo_result()))
    assert frame[:4] == struct.pack("!i", -0x7FFF0000 + TMessageType.REPLY)
    with pytest.raises(MalformedFrameError, match="version header"):
        check_reply_frame(b"\x00\x00\x00\x04" + frame[4:])
