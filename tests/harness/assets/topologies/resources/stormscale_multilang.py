"""Shared helpers of the benchmark's multilang components (standard library only).

Each component process serves its own counters in Prometheus text format on a loopback port and, when
the topology conf names ``stormscale.metrics.sd.dir``, writes a file_sd target file there so that a
Prometheus with a ``file_sd_configs`` on that folder scrapes it. Shell components cannot register
Storm metrics from Flux, so this is how the test bed sees offered load and busy time per task.
"""

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SD_DIR_KEY = "stormscale.metrics.sd.dir"


class Metrics:
    """Thread-safe counters and gauges of one task, rendered as Prometheus text."""

    def __init__(self, labels):
        self.labels = labels
        self.lock = threading.Lock()
        self.values = {}
        self.types = {}

    def inc(self, name, amount=1.0, **extra):
        key = (name, tuple(sorted(extra.items())))
        with self.lock:
            self.types.setdefault(name, "counter")
            self.values[key] = self.values.get(key, 0.0) + amount

    def set(self, name, value, kind="gauge", **extra):
        key = (name, tuple(sorted(extra.items())))
        with self.lock:
            self.types.setdefault(name, kind)
            self.values[key] = float(value)

    def render(self):
        with self.lock:
            items = sorted(self.values.items())
            types = dict(self.types)
        lines, typed = [], set()
        for (name, extra), value in items:
            if name not in typed:
                lines.append(f"# TYPE {name} {types[name]}")
                typed.add(name)
            labels = ",".join('{}="{}"'.format(*kv) for kv in sorted({**self.labels, **dict(extra)}.items()))
            lines.append(f"{name}{{{labels}}} {value!r}")
        return "\n".join(lines) + "\n"


def _handler(metrics):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = metrics.render().encode()
            self.send_response(200 if self.path.startswith("/metrics") else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Handler


def serve(metrics, conf, file_stem):
    """Serve ``metrics`` on 127.0.0.1:<free port>; register it for file_sd if the conf says where."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(metrics))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sd_dir = conf.get(SD_DIR_KEY)
    if sd_dir:
        target = [{"targets": [f"127.0.0.1:{server.server_port}"], "labels": {}}]
        tmp = os.path.join(sd_dir, f".{file_stem}.tmp")
        with open(tmp, "w") as out:
            json.dump(target, out)
        os.replace(tmp, os.path.join(sd_dir, f"{file_stem}.json"))
    return server


def task_labels(conf, context):
    """topology, component and task of this process, from the multilang handshake."""
    return {
        "topology": str(conf.get("topology.name", "")),
        "component": str(context["componentid"]),
        "task": str(context["taskid"]),
    }


def task_count(context):
    """How many tasks the component of this process has."""
    component = context["componentid"]
    return sum(1 for name in context["task->component"].values() if name == component)


def parse_streams(spec):
    """``"to2=0.6,to3=0.4"`` -> [("to2", 0.6), ("to3", 0.4)]; empty -> the default stream."""
    if not spec:
        return [("default", 1.0)]
    pairs = [part.split("=") for part in spec.split(",") if part]
    return [(name, float(weight)) for name, weight in pairs]


class StreamChooser:
    """Smooth weighted round robin: over any window, stream shares follow the weights."""

    def __init__(self, streams):
        self.streams = streams
        self.total = sum(weight for _, weight in streams)
        self.credit = [0.0] * len(streams)

    def next(self):
        for i, (_, weight) in enumerate(self.streams):
            self.credit[i] += weight
        best = max(range(len(self.streams)), key=lambda i: self.credit[i])
        self.credit[best] -= self.total
        return self.streams[best][0]


class Selectivity:
    """Tuples to emit per input, fractional selectivity carried over between inputs."""

    def __init__(self, ratio):
        self.ratio = ratio
        self.carry = 0.0

    def outputs(self):
        self.carry += self.ratio
        whole = int(self.carry)
        self.carry -= whole
        return whole


def burn_cpu(micros):
    """Spin until this thread has used ``micros`` microseconds of CPU (not wall time)."""
    if micros <= 0:
        return
    end = time.thread_time() + micros / 1e6
    while time.thread_time() < end:
        pass


def option(argv, name, default):
    """The value after ``name`` in ``argv`` (as a string), or ``default``."""
    return argv[argv.index(name) + 1] if name in argv else default
