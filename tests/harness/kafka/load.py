"""A load generator for the test bed's Kafka: records at a rate that follows a schedule.

A :class:`Schedule` is a list of segments, each a rate (records/s) held or ramped linearly over a
duration, written as text with :meth:`Schedule.parse`::

    60@120s                 60/s for 120 s
    60@2m,120@5m            60/s for 2 minutes, then 120/s for 5 minutes
    ramp:120->60@60s        from 120/s down to 60/s over 60 s (linear)
    0@10s                   a pause of 10 s

Segments are joined by commas; durations take ``s`` (default), ``m`` or ``h``. The generator sends,
at every moment, as many records as the schedule's integral says are due by then
(:meth:`Schedule.due`), so the count follows the schedule whatever its pauses or bursts. Keys are
consecutive integers as decimal strings (``"0"``, ``"1"``, ...; from ``first_key``), so a sink that
records keys shows which records arrived; values are ``record-<key>``. The producer is idempotent
with ``acks=all``: a retried send is never written twice, so the topic's offsets add up to
:attr:`LoadGenerator.produced`.

It runs in a background thread (``start()`` / ``stop()``, ``produced``, ``rate_now``) or in the
foreground with progress lines::

    python -m tests.harness.kafka.load --bootstrap 127.0.0.1:9092 --topic load --schedule 60@120s
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import KafkaError, Message, Producer

Log = Callable[[str], None]
HELP_LINE = "Produce records to a Kafka topic at a rate that follows a schedule."
FLUSH_TIMEOUT_S = 30.0
TICK_S = 0.005
PROGRESS_S = 5.0
#: a record's value: this and its key, so that a consumer that emits values where keys are meant shows
VALUE = b"record-"
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}
_SEGMENT = re.compile(
    r"^(?:ramp:(?P<start>[0-9.]+)->(?P<end>[0-9.]+)|(?P<rate>[0-9.]+))@(?P<length>[0-9.]+)(?P<unit>[smh]?)$"
)


class ScheduleError(ValueError):
    """A schedule that cannot be parsed or makes no sense (negative, empty)."""


@dataclass(frozen=True)
class Segment:
    """A rate held (``start == end``) or ramped linearly from ``start`` to ``end`` over ``seconds``."""

    start: float
    end: float
    seconds: float

    def rate_at(self, t: float) -> float:
        """The rate ``t`` seconds into the segment."""
        return self.start + (self.end - self.start) * t / self.seconds

    def due(self, t: float) -> float:
        """Records due ``t`` seconds into the segment (the rate's integral from 0 to ``t``)."""
        return t * (self.start + self.rate_at(t)) / 2

    def __str__(self) -> str:
        length = f"{self.seconds:g}s"
        if self.start == self.end:
            return f"{self.start:g}@{length}"
        return f"ramp:{self.start:g}->{self.end:g}@{length}"


@dataclass(frozen=True)
class Schedule:
    """Segments one after the other; no rate before 0 or after :attr:`seconds`."""

    segments: tuple[Segment, ...]

    def __post_init__(self) -> None:
        if not self.segments:
            raise ScheduleError("a schedule needs at least one segment")
        for segment in self.segments:
            if segment.seconds <= 0 or segment.start < 0 or segment.end < 0:
                raise ScheduleError(f"segment {segment}: rates must be ≥ 0 and durations > 0")

    @classmethod
    def parse(cls, text: str) -> Schedule:
        """``"60@120s,120@300s,ramp:120->60@60s"`` (see the module's documentation)."""
        return cls(tuple(_parse_segment(part.strip()) for part in text.split(",") if part.strip()))

    @classmethod
    def constant(cls, rate: float, seconds: float) -> Schedule:
        """One segment: ``rate`` records/s for ``seconds``."""
        return cls((Segment(rate, rate, seconds),))

    @property
    def seconds(self) -> float:
        """How long the schedule lasts."""
        return sum(s.seconds for s in self.segments)

    @property
    def total(self) -> int:
        """How many records the whole schedule sends."""
        return math.floor(self.due(self.seconds) + 1e-9)

    def rate_at(self, t: float) -> float:
        """The rate (records/s) ``t`` seconds after the start; 0 before it and after the end."""
        if t < 0:
            return 0.0
        for segment in self.segments:
            if t < segment.seconds:
                return segment.rate_at(t)
            t -= segment.seconds
        return 0.0

    def due(self, t: float) -> float:
        """Records due by ``t`` seconds after the start (the rate's integral; constant after the end)."""
        done = 0.0
        for segment in self.segments:
            if t <= 0:
                break
            done += segment.due(min(t, segment.seconds))
            t -= segment.seconds
        return done

    def __str__(self) -> str:
        return ",".join(str(s) for s in self.segments)


def _parse_segment(text: str) -> Segment:
    match = _SEGMENT.match(text)
    if match is None:
        raise ScheduleError(f"cannot read segment {text!r}: expected RATE@DURATION or ramp:FROM->TO@DURATION")
    try:
        seconds = float(match["length"]) * _UNITS[match["unit"] or "s"]
        if match["rate"] is not None:
            return Segment(float(match["rate"]), float(match["rate"]), seconds)
        return Segment(float(match["start"]), float(match["end"]), seconds)
    except ValueError as err:
        raise ScheduleError(f"cannot read segment {text!r}: {err}") from err


class LoadGenerator:
    """Produces ``schedule`` to ``topic``; ``start()`` runs it in a thread, ``run()`` in this one."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        schedule: Schedule,
        *,
        first_key: int = 0,
        log: Log | None = None,
        progress_s: float = PROGRESS_S,
    ) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.schedule = schedule
        self.first_key = first_key
        self.log = log
        self.progress_s = progress_s
        #: records handed to the producer / acknowledged by the broker / refused for good
        self.sent = 0
        self.delivered = 0
        self.failed = 0
        self.errors: list[str] = []
        self.started_at = 0.0
        self.ended_at = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def produced(self) -> int:
        """Records the broker has acknowledged (all of them once the generator has stopped)."""
        return self.delivered

    @property
    def running(self) -> bool:
        return self.started_at > 0 and self.ended_at == 0

    @property
    def elapsed(self) -> float:
        """Seconds since the start (to the end, once ended)."""
        if self.started_at == 0:
            return 0.0
        return (self.ended_at or time.monotonic()) - self.started_at

    @property
    def rate_now(self) -> float:
        """The schedule's rate at this moment (0 before the start and after the end)."""
        return self.schedule.rate_at(self.elapsed) if self.running else 0.0

    def start(self) -> LoadGenerator:
        """Run the schedule in a background thread."""
        self._thread = threading.Thread(target=self.run, name=f"load-{self.topic}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = FLUSH_TIMEOUT_S + 10) -> None:
        """End the schedule now (or let an ended one be); wait until every record is acknowledged."""
        self._stop.set()
        self.wait(timeout_s)

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait for the schedule's end (and the last acknowledgements); True if it has ended."""
        if self._thread is not None:
            self._thread.join(timeout_s)
            return not self._thread.is_alive()
        return self.ended_at > 0

    def run(self) -> None:
        """Send the schedule's records on time, then flush: the thread's body, or a foreground run."""
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "log_level": 4,
            }
        )
        self.started_at = time.monotonic()
        next_progress = self.progress_s
        try:
            while not self._stop.is_set():
                elapsed = time.monotonic() - self.started_at
                self._send_due(producer, math.floor(self.schedule.due(elapsed) + 1e-9))
                producer.poll(0)
                if elapsed >= self.schedule.seconds:
                    break
                if self.log is not None and elapsed >= next_progress:
                    self.log(self.progress())
                    next_progress += self.progress_s
                self._stop.wait(TICK_S)
        finally:
            left = producer.flush(FLUSH_TIMEOUT_S)
            self.ended_at = time.monotonic()
            if left:
                self.errors.append(f"{left} records still unacknowledged after {FLUSH_TIMEOUT_S:.0f} s")
            if self.log is not None:
                self.log(self.progress())

    def _send_due(self, producer: Producer, due: int) -> None:
        while self.sent < due:
            key = str(self.first_key + self.sent).encode()
            while True:
                try:
                    producer.produce(self.topic, key=key, value=VALUE + key, on_delivery=self._delivered)
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    producer.poll(0.1)
            self.sent += 1

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        if err is None:
            self.delivered += 1
        else:
            self.failed += 1
            if len(self.errors) < 10:
                self.errors.append(str(err))

    def progress(self) -> str:
        """One line: time, the schedule's rate now, records sent and acknowledged."""
        return (
            f"[load] t={self.elapsed:6.1f} s  rate {self.schedule.rate_at(self.elapsed):7.1f}/s  "
            f"sent {self.sent}  produced {self.delivered}  failed {self.failed}"
        )


def main(argv: list[str] | None = None) -> int:
    """Produce a schedule to a topic in the foreground, with a progress line every few seconds."""
    parser = argparse.ArgumentParser(prog="python -m tests.harness.kafka.load", description=HELP_LINE)
    parser.add_argument("--bootstrap", required=True, help="host:port of a broker")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--schedule", required=True, type=Schedule.parse, help="e.g. 60@2m,ramp:60->120@60s")
    parser.add_argument("--first-key", type=int, default=0)
    parser.add_argument("--progress-s", type=float, default=PROGRESS_S)
    args = parser.parse_args(argv)
    schedule: Schedule = args.schedule
    print(f"[load] {schedule} to {args.topic} on {args.bootstrap}: {schedule.total} records", flush=True)
    generator = LoadGenerator(
        args.bootstrap,
        args.topic,
        args.schedule,
        first_key=args.first_key,
        log=lambda line: print(line, flush=True),
        progress_s=args.progress_s,
    )
    try:
        generator.run()
    except KeyboardInterrupt:
        print(generator.progress(), flush=True)
    for error in generator.errors:
        print(f"[load] error: {error}", file=sys.stderr)
    return 1 if generator.failed or generator.errors else 0


if __name__ == "__main__":
    sys.exit(main())
