"""A timeline of what this client does, as a Chrome trace-event JSON file that Perfetto UI
(ui.perfetto.dev) and chrome://tracing open:

    with gt.profiler.trace("out.json"):
        train_step()

or `GT_TRACE=out.json python train.py` (the whole run, written at exit). One process per track:

- the client: one slice per op issued (its name, result shape and your source line), one per
  sync (a `.numpy()` / `.item()` / `gt.synchronize()` waiting for values, with the bytes fetched)
  and one per flush (a batch sent to the dispatcher: instructions, bytes);
- the dispatcher: each batch's `dispatch` (plan cache hit or miss), with `capture` and each pass
  of its pipeline on a miss, and a `send` per worker program;
- every worker: each `program` it ran for this session, and inside it each kernel (an op, with
  dtype, shape and your line), fused `region`, collective or send/recv (bytes, peers), each
  fetch or sync it answered, the background `compile`s of fused regions, and a `memory` counter
  track: the device memory your session's tensors hold there after each unit (allocations and
  frees); on a CUDA worker also a "GPU (device time)" thread: each unit as it ran on the GPU
  (CUDA events), since kernels run after the host queues them.

The daemons record on their own clocks; the trace puts every event on the client's
(time.perf_counter_ns, CLOCK_MONOTONIC): the client measures the dispatcher's offset, and the
dispatcher each worker's, from the fastest of five clock readings (NTP's estimate); the offsets
and round trips are in the file's `otherData`. `gt trace summary out.json` prints where the time
went and `gt trace plot out.json -o timeline.png` draws it.

Format: the Trace Event Format's "X" (complete) events, timestamps and durations in
microseconds (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU).
Overhead when no trace is on: one check of a module global per op.

PyTorch's profiler API records the same events (torch.profiler):

    with gt.profiler.profile(schedule=gt.profiler.schedule(wait=1, warmup=1, active=3),
                             on_trace_ready=gt.profiler.tensorboard_trace_handler("./log")) as prof:
        for batch in loader:
            train_step(batch)
            prof.step()
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))

`record_function("name")` marks a span of the client's track (category user_annotation).
In key_averages, "CPU" times are the client's time issuing each op (GT runs no op in the
client's process) and "Device" times the workers' kernels of that name, microseconds.
"""
import atexit
import collections
import contextlib
import enum
import functools
import getpass
import json
import math
import os
import socket
import threading
import time

from . import _C
from . import _runtime
from . import _tensor

__all__ = ["trace", "summary", "plot", "profile", "record_function", "schedule", "ProfilerActivity",
           "ProfilerAction", "tensorboard_trace_handler"]


class _Recorder:
    """Events of one trace, kept as tuples until written (a dict per event would cost more)."""

    def __init__(self, record_shapes=False):
        self.ops = []    # (name, start_ns, end_ns, line, shape, dtype, input shapes or None)
        self.record_shapes = record_shapes  # keep each op's operands' shapes (profile(record_shapes=True))
        self.syncs = []  # (start_ns, end_ns, line, bytes)
        self.pid = os.getpid()
        self.tid = threading.get_ident()
        self.remote = []  # what _C.Client.stop_trace returned: the dispatcher's and workers' events
        self.flushes = []  # (start_ns, duration_ns, args_json): the batches the client core sent
        self.ranges = []  # (name, start_ns, end_ns): record_function spans
        self.clock = {}   # the measured clock offsets (otherData)
        self.client = None  # the client whose session the daemons trace

    def start_remote(self, client):
        """The dispatcher and workers start recording `client`'s session."""
        client.start_trace()
        self.client = client

    def stop_remote(self):
        """Collects their events (syncing first); a lost dispatcher leaves the client's track alone."""
        if self.client is None:
            return
        client, self.client = self.client, None
        try:
            self.remote = client.stop_trace()
            self.flushes = client.flushes()
            offset, rtt = client.dispatcher_offset_ns()
        except ConnectionError as e:
            self.clock = {"error": f"the dispatcher's and workers' tracks are missing: {e}"}
            return
        self.clock = {"dispatcher_offset_ns": offset, "dispatcher_rtt_ns": rtt,
                      "workers": {p["label"]: {"offset_ns": p["offset_ns"], "rtt_ns": p["rtt_ns"]}
                                  for p in self.remote[1:]}}

    def op(self, name, start_ns, result, end_ns=None, inputs=None):
        """An op issued from start_ns until end_ns (default: now): its name, result shape and
        dtype, the user's line, and with record_shapes its tensor operands' shapes."""
        end_ns = time.perf_counter_ns() if end_ns is None else end_ns
        shapes = [list(t.shape) for t in inputs] if self.record_shapes and inputs is not None else None
        self.ops.append((name, start_ns, end_ns, _C.last_location(), result.shape, result.dtype, shapes))

    def sync(self, start_ns, nbytes):
        """A wait for values (a fetch of nbytes, or gt.synchronize) from start_ns until now."""
        self.syncs.append((start_ns, time.perf_counter_ns(), _C.user_location(), nbytes))

    def trace_events(self):
        def event(name, category, start, end, args):
            return {"name": name, "cat": category, "ph": "X", "ts": start / 1000, "dur": (end - start) / 1000,
                    "pid": self.pid, "tid": self.tid, "args": args}
        label = f"gt client {getpass.getuser()}@{socket.gethostname()}:{self.pid}"
        out = [{"name": "process_name", "ph": "M", "pid": self.pid, "args": {"name": label}}]
        for n, s, e, line, shape, dtype, inputs in self.ops:
            args = {"line": line, "shape": list(shape), "dtype": dtype.name,
                    "bytes": math.prod(shape) * dtype.itemsize}
            if inputs is not None:
                args["input_shapes"] = inputs
            out.append(event(n, "op", s, e, args))
        out += [event("sync", "sync", s, e, {"line": line, "bytes": b}) for s, e, line, b in self.syncs]
        out += [event("flush", "flush", s, s + d, json.loads(args)) for s, d, args in self.flushes]
        out += [event(n, "user_annotation", s, e, {}) for n, s, e in self.ranges]
        for order, p in enumerate(self.remote, start=1):
            out.append({"name": "process_name", "ph": "M", "pid": p["pid"], "args": {"name": p["label"]}})
            out.append({"name": "process_sort_index", "ph": "M", "pid": p["pid"], "args": {"sort_index": order}})
            if any(category == "gpu" for _, category, _, _, _ in p["events"]):  # a CUDA worker
                out.append({"name": "thread_name", "ph": "M", "pid": p["pid"], "tid": 0, "args": {"name": "host"}})
                out.append({"name": "thread_name", "ph": "M", "pid": p["pid"], "tid": 1,
                            "args": {"name": "GPU (device time)"}})
            for name, category, start, duration, args in p["events"]:
                if category == "memory":  # a counter track: the session's memory on that worker
                    out.append({"name": "memory", "cat": "memory", "ph": "C", "ts": start / 1000, "pid": p["pid"],
                                "args": {"live bytes": json.loads(args)["bytes"]}})
                    continue
                out.append({"name": name, "cat": category, "ph": "X", "ts": start / 1000, "dur": duration / 1000,
                            "pid": p["pid"], "tid": 1 if category == "gpu" else 0,
                            "args": json.loads(args) if args else {}})
        return out

    def write(self, path):
        """Writes the trace to `path`: through a temporary file renamed over it (a reader never
        sees half a file), or straight into it when it exists and is not a regular file
        (/dev/null, a pipe), which renaming would replace."""
        doc = {"traceEvents": self.trace_events(), "displayTimeUnit": "ms", "otherData": {"clock": self.clock}}
        if os.path.exists(path) and not os.path.isfile(path):
            with open(path, "w") as f:
                json.dump(doc, f)
            return
        tmp = f"{path}.part"
        with open(tmp, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, path)


@contextlib.contextmanager
def trace(path):
    """Records this client's ops and syncs inside the `with` block and writes them to `path`
    (Chrome trace-event JSON) when it ends. Raises RuntimeError if a trace is already on."""
    if _tensor._trace is not None:
        raise RuntimeError("a gt.profiler trace is already on (one at a time)")
    recorder = _tensor._trace = _Recorder()
    recorder.start_remote(_runtime.client())
    try:
        yield recorder
    finally:
        _tensor._trace = None
        recorder.stop_remote()
        recorder.write(path)


# ---------------------------------------------------------------- torch.profiler's API

class ProfilerActivity(enum.Enum):
    """What to record (torch.profiler.ProfilerActivity): GT records the client's ops and the
    workers' kernels (on a GPU worker also their device time) whichever are named."""
    CPU = 0
    CUDA = 1
    XPU = 2
    MTIA = 3
    PrivateUse1 = 4


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait, warmup, active, repeat=0, skip_first=0):
    """torch.profiler.schedule: after skip_first steps, cycles of `wait` idle steps, `warmup`
    steps (not recorded: GT's recording needs no warm-up) and `active` recorded steps, the
    last of which ends the cycle's trace (on_trace_ready); `repeat` cycles (0: no limit).
    Returns step -> ProfilerAction."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError("Invalid profiler schedule arguments")

    def schedule_fn(step):
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        at = step % cycle
        if at < wait:
            return ProfilerAction.NONE
        if at < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if at < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return schedule_fn


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An on_trace_ready that writes each trace to dir_name/WORKER.TIME_MS.pt.trace.json[.gz]
    (WORKER: worker_name, else HOST_PID), the files TensorBoard's profiler plugin lists."""
    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{name}.{time.time_ns() // 1_000_000}.pt.trace.json" + (".gz" if use_gzip else ""))
        prof.export_chrome_trace(path)
    return handler


class record_function(contextlib.ContextDecorator):
    """A named span on the client's track while a profile or trace is on (else nothing), as
    torch.profiler.record_function; also a decorator."""

    def __init__(self, name, args=None):
        self.name = name
        self._starts = []  # a stack: as a decorator, one object serves nested (recursive) calls

    def __enter__(self):
        self._starts.append(time.perf_counter_ns() if _tensor._trace is not None else None)
        return self

    def __exit__(self, *exc):
        start = self._starts.pop()
        if start is not None and _tensor._trace is not None:
            _tensor._trace.ranges.append((self.name, start, time.perf_counter_ns()))
        return False


class profile:
    """torch.profiler.profile on GT's trace: records inside the `with` block (or between
    start() and stop()); with a `schedule`, only in its RECORD steps, counted by step(), and
    each cycle's trace goes to on_trace_ready(prof) when its last active step ends (without a
    schedule: once, at stop). key_averages() and export_chrome_trace(path) read the last
    trace. record_shapes keeps each op's operands' shapes (key_averages(group_by_input_shape=True)
    groups by them and prints them); profile_memory adds a memory column to key_averages' table
    (the bytes of the results each op kind made on the workers; sort_by="self_cpu_memory_usage"
    works either way). The other arguments (activities, with_stack, with_flops, with_modules)
    are accepted: GT's trace always holds each op's line and, per worker, the session's memory.
    Raises RuntimeError if a gt.profiler trace is already on."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False, experimental_config=None,
                 execution_trace_observer=None, acc_events=False, use_cuda=None, enabled=True):
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.step_num = 0
        self._recorder = None  # recording now
        self._last = None      # the last finished trace's recorder
        self._events = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def _action(self):
        return self.schedule(self.step_num) if self.schedule else ProfilerAction.RECORD

    def _begin(self):
        if self._recorder is None and self.enabled:
            if _tensor._trace is not None:
                raise RuntimeError("a gt.profiler trace is already on (one at a time)")
            self._recorder = _tensor._trace = _Recorder(self.record_shapes)
            self._recorder.start_remote(_runtime.client())

    def _end(self, save):
        recorder, self._recorder = self._recorder, None
        if recorder is None:
            return
        if _tensor._trace is recorder:
            _tensor._trace = None
        recorder.stop_remote()
        self._last, self._events = recorder, None
        if save and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def start(self):
        if self._action() in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._begin()

    def stop(self):
        self._end(save=True)

    def step(self):
        """Marks the end of a training step for the schedule."""
        before = self._action()
        self.step_num += 1
        after = self._action()
        if before == ProfilerAction.RECORD_AND_SAVE:
            self._end(save=True)
        if after in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._begin()

    def _trace_events(self):
        if self._last is None:
            raise RuntimeError("the profiler has no finished trace yet (leave the `with` block, or call stop(), "
                               "or reach the end of a schedule's active steps)")
        if self._events is None:
            self._events = self._last.trace_events()
        return self._events

    def export_chrome_trace(self, path):
        """Writes the last trace as Chrome trace-event JSON (gzip-compressed for a .gz path)."""
        doc = {"traceEvents": self._trace_events(), "displayTimeUnit": "ms", "otherData": {"clock": self._last.clock}}
        if path.endswith(".gz"):
            import gzip
            with gzip.open(path, "wt") as f:
                json.dump(doc, f)
        else:
            with open(path, "w") as f:
                json.dump(doc, f)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        """The last trace's events averaged per name (an op, a fused region, a record_function
        span): an _EventList whose table() prints them."""
        rows = collections.OrderedDict()
        for e in self._trace_events():
            if e.get("ph") != "X" or e["cat"] not in ("op", "user_annotation", "kernel", "region", "collective",
                                                      "p2p", "gpu"):
                continue
            key = e["name"]
            shapes = e["args"].get("input_shapes") if group_by_input_shape and e["cat"] == "op" else None
            if shapes is not None:
                key = (key, repr(shapes))
            row = rows.get(key)
            if row is None:
                row = rows[key] = _EventAvg(e["name"], shapes)
            if e["cat"] in ("op", "user_annotation"):
                row.count += 1
                row.cpu_time_total += e["dur"]
                row.memory_usage += e["args"].get("bytes", 0)
            elif e["cat"] == "gpu":  # a CUDA worker's device times replace its host's for that name
                if not row.device_from_gpu:
                    row.device_time_total, row.device_count, row.device_from_gpu = 0.0, 0, True
                row.device_time_total += e["dur"]
                row.device_count += 1
            elif not row.device_from_gpu:
                row.device_time_total += e["dur"]
                row.device_count += 1
        return _EventList(rows.values(), self.profile_memory, group_by_input_shape and self.record_shapes,
                          _tensor_device_is_cuda())

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Writes the last trace as folded stacks for a flame graph (Brendan Gregg's
        flamegraph.pl, speedscope): one line "frame;frame value" per op kind and source line,
        value its total client time (metric "self_cpu_time_total") or its workers' time
        ("self_cuda_time_total" / "self_device_time_total") in microseconds. GT records the
        user's line of each op, not the whole Python stack, so each stack is that line and the
        op. Raises ValueError for another metric."""
        if metric not in ("self_cpu_time_total", "self_cuda_time_total", "self_device_time_total"):
            raise ValueError(f"export_stacks: metric must be self_cpu_time_total or self_cuda_time_total, got {metric!r}")
        totals = collections.Counter()
        device = metric != "self_cpu_time_total"
        for e in self._trace_events():
            if e.get("ph") != "X":
                continue
            if e["cat"] == "op" and not device:
                totals[f"{e['args'].get('line', '?')};{e['name']}"] += e["dur"]
            elif device and e["cat"] in ("kernel", "region", "gpu"):
                totals[f"{e['args'].get('line', '?')};{e['name']}"] += e["dur"]
        with open(path, "w") as f:
            for stack, value in totals.items():
                f.write(f"{stack} {int(round(value))}\n")

    def events(self):
        """The last trace's events (Chrome trace-event dicts)."""
        return list(self._trace_events())


def _tensor_device_is_cuda():
    from . import _device
    return _device.session_device_type() == "cuda"


class _EventAvg:
    """One row of key_averages: times in microseconds; memory_usage the bytes of the results
    its ops made on the workers (CPU memory on CPU workers, device memory on GPU workers)."""
    __slots__ = ("key", "input_shapes", "count", "device_count", "cpu_time_total", "device_time_total",
                 "device_from_gpu", "memory_usage", "on_gpu")

    def __init__(self, key, input_shapes):
        self.key, self.input_shapes = key, input_shapes
        self.count = self.device_count = 0
        self.cpu_time_total = self.device_time_total = 0.0
        self.device_from_gpu = False
        self.memory_usage = 0
        self.on_gpu = False

    cpu_memory_usage = self_cpu_memory_usage = property(lambda self: 0 if self.on_gpu else self.memory_usage)
    device_memory_usage = self_device_memory_usage = cuda_memory_usage = self_cuda_memory_usage = property(
        lambda self: self.memory_usage if self.on_gpu else 0)

    self_cpu_time_total = property(lambda self: self.cpu_time_total)
    cuda_time_total = self_cuda_time_total = self_device_time_total = property(lambda self: self.device_time_total)
    cpu_time = property(lambda self: self.cpu_time_total / max(self.count, 1))
    device_time = cuda_time = property(lambda self: self.device_time_total / max(self.count or self.device_count, 1))

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} count={self.count} cpu_time_total={self.cpu_time_total:.1f}us "
                f"device_time_total={self.device_time_total:.1f}us>")


class _EventList(list):
    """key_averages()'s rows; table() formats them as PyTorch's."""
    _SORT = {"cpu_time_total": "cpu_time_total", "self_cpu_time_total": "cpu_time_total",
             "cpu_time": "cpu_time", "cuda_time_total": "device_time_total", "self_cuda_time_total": "device_time_total",
             "device_time_total": "device_time_total", "self_device_time_total": "device_time_total",
             "count": "count", "cpu_memory_usage": "cpu_memory_usage", "self_cpu_memory_usage": "cpu_memory_usage",
             "cuda_memory_usage": "device_memory_usage", "self_cuda_memory_usage": "device_memory_usage",
             "device_memory_usage": "device_memory_usage", "self_device_memory_usage": "device_memory_usage"}

    def __init__(self, rows=(), profile_memory=False, input_shapes=False, on_gpu=False):
        super().__init__(rows)
        self.profile_memory, self.input_shapes = profile_memory, input_shapes
        for r in self:
            r.on_gpu = on_gpu

    def table(self, sort_by=None, row_limit=100, max_name_column_width=55, header=None, top_level_events_only=False):
        """The rows as text: name, client (CPU) time, workers' (device) time, calls; sorted by
        sort_by (PyTorch's names: cpu_time_total, self_cpu_time_total, cuda_time_total,
        device_time_total, count, ...), at most row_limit rows. Raises ValueError for an
        unknown sort key."""
        rows = list(self)
        if sort_by is not None:
            if sort_by not in self._SORT:
                raise ValueError(f"unknown sort_by {sort_by!r}; expected one of {sorted(self._SORT)}")
            rows.sort(key=lambda r: -getattr(r, self._SORT[sort_by]))
        if row_limit is not None and row_limit >= 0:
            rows = rows[:row_limit]
        cpu_sum = sum(r.cpu_time_total for r in self) or 1.0
        w = max_name_column_width
        mem = "Device Mem" if any(r.on_gpu for r in self) else "CPU Mem"
        head = (f"{'Name':<{w}s} {'CPU total %':>12s} {'CPU total':>12s} {'CPU avg':>10s} {'Device total':>13s}"
                + (f" {mem:>12s}" if self.profile_memory else "") + f" {'# of Calls':>11s}"
                + ("  Input Shapes" if self.input_shapes else ""))
        line = "-" * len(head)
        out = ([header] if header else []) + [line, head, line]
        for r in rows:
            name = str(r.key if not isinstance(r.key, tuple) else r.key[0])[:w]
            out.append(f"{name:<{w}s} {100 * r.cpu_time_total / cpu_sum:11.2f}% {_us(r.cpu_time_total):>12s} "
                       f"{_us(r.cpu_time):>10s} {_us(r.device_time_total):>13s}"
                       + (f" {_bytes(r.memory_usage):>12s}" if self.profile_memory else "")
                       + f" {r.count or r.device_count:11d}"
                       + (f"  {r.input_shapes if r.input_shapes is not None else []}" if self.input_shapes else ""))
        out += [line, f"Self CPU time total: {_us(sum(r.cpu_time_total for r in self))}",
                f"Self Device time total: {_us(sum(r.device_time_total for r in self))}"]
        return "\n".join(out)

    def __str__(self):
        return self.table()


def _bytes(n):
    """PyTorch's profiler units: b, Kb, Mb, Gb (powers of 1024)."""
    for unit, size in (("Gb", 1 << 30), ("Mb", 1 << 20), ("Kb", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} b"


def _us(x):
    return f"{x / 1e6:.3f}s" if x >= 1e6 else f"{x / 1e3:.3f}ms" if x >= 1e3 else f"{x:.3f}us"


def _trace_whole_run(path):
    """GT_TRACE=path: records from import to exit (the daemons from when the session opens)."""
    recorder = _tensor._trace = _Recorder()
    _runtime.session_open_hooks.append(recorder.start_remote)

    def finish():  # registered after _runtime's shutdown, so it runs before it
        if _tensor._trace is recorder:
            _tensor._trace = None
        recorder.stop_remote()
        recorder.write(path)
    atexit.register(finish)


def summary(path, top=10):
    """The text `gt trace summary` prints: time per op kind (issue time on the client, in
    microseconds), the slowest syncs (milliseconds, bytes fetched) with their lines, the share
    of the traced time spent waiting, the workers' top kernels, and each worker's busy time and
    longest idle gaps (milliseconds, within the trace). Raises OSError for a missing file and ValueError
    (json.JSONDecodeError) for one that is not JSON."""
    with open(path) as f:
        doc = json.load(f)["traceEvents"]
    events = [e for e in doc if e.get("ph") == "X"]
    if not events:
        return f"{path}: no events"
    start = min(e["ts"] for e in events)
    end = max(e["ts"] + e["dur"] for e in events)
    ops = collections.defaultdict(lambda: [0, 0.0])
    for e in events:
        if e["cat"] == "op":
            ops[e["name"]][0] += 1
            ops[e["name"]][1] += e["dur"]
    syncs = sorted((e for e in events if e["cat"] == "sync"), key=lambda e: -e["dur"])
    waited = sum(e["dur"] for e in syncs)
    lines = [f"{path}: {len(events)} events over {(end - start) / 1e3:.1f} ms; "
             f"{waited / 1e3:.1f} ms ({100 * waited / max(end - start, 1e-9):.0f}%) waiting in {len(syncs)} syncs",
             "", f"{'op':24s} {'count':>8s} {'issue us total':>15s} {'us each':>9s}"]
    for name, (count, total) in sorted(ops.items(), key=lambda kv: -kv[1][1])[:top]:
        lines.append(f"{name:24s} {count:8d} {total:15.1f} {total / count:9.2f}")
    if syncs:
        lines += ["", f"{'slowest syncs':40s} {'ms':>9s} {'bytes':>10s}"]
        for e in syncs[:top]:
            lines.append(f"{e['args'].get('line', '?'):40s} {e['dur'] / 1e3:9.3f} {e['args'].get('bytes', 0):10d}")
    # The workers' tracks: their busiest kernels and their longest idle gaps inside the trace;
    # on a GPU also as the device ran them (category "gpu": kernels run after they are queued).
    names = {e["pid"]: e["args"]["name"] for e in doc if e.get("ph") == "M" and e.get("name") == "process_name"}
    work = [e for e in events if e["cat"] in ("kernel", "region", "collective", "p2p")]
    on_gpu = [e for e in events if e["cat"] == "gpu"]
    for title, spans, suffix in (("top kernels (all workers)", work, ""),
                                 ("top kernels on the GPU (device time)", on_gpu, " GPU")):
        if spans:
            lines += _kernel_table(title, spans, top) + _busy_table(spans, names, start, end, suffix)
    return "\n".join(lines)


def _kernel_table(title, spans, top):
    kernels = collections.defaultdict(lambda: [0, 0.0])
    for e in spans:
        kernels[e["name"]][0] += 1
        kernels[e["name"]][1] += e["dur"]
    lines = ["", f"{title:48s} {'count':>8s} {'ms total':>10s} {'us each':>9s}"]
    for name, (count, total) in sorted(kernels.items(), key=lambda kv: -kv[1][1])[:top]:
        lines.append(f"{name[:48]:48s} {count:8d} {total / 1e3:10.3f} {total / count:9.1f}")
    return lines


def _busy_table(spans, names, start, end, suffix):
    """Per process: the time covered by `spans` and the three longest gaps between them."""
    lines = ["", f"{'worker':28s} {'busy ms':>9s} {'busy':>5s} {'longest idle gaps, ms':>24s}"]
    for pid in sorted({e["pid"] for e in spans}):
        busy, gaps, reach = 0.0, [], start
        for a, b in sorted((e["ts"], e["ts"] + e["dur"]) for e in spans if e["pid"] == pid):
            if a > reach:
                gaps.append(a - reach)
            busy += max(0.0, b - max(a, reach))
            reach = max(reach, b)
        gaps.append(max(0.0, end - reach))
        longest = ", ".join(f"{g / 1e3:.2f}" for g in sorted(gaps, reverse=True)[:3])
        label = (names.get(pid, str(pid)) + suffix)[:28]
        lines.append(f"{label:28s} {busy / 1e3:9.2f} {busy / max(end - start, 1e-9):5.0%} {longest:>24s}")
    return lines


def plot(path, out, width=14.0):
    """Draws the trace at `path` as a timeline picture `out` (PNG, SVG or PDF by its suffix;
    matplotlib): one row per process and category (ops, syncs), milliseconds from the first event
    on the x axis, each slice a bar. Returns the number of slices drawn. Raises ImportError
    without matplotlib and ValueError for a trace without slices."""
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError("gt trace plot needs matplotlib (pip install matplotlib; scripts/install-deps.sh has it)") from e
    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    with open(path) as f:
        doc = json.load(f)["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in doc if e.get("ph") == "M" and e.get("name") == "process_name"}
    slices = [e for e in doc if e.get("ph") == "X"]
    if not slices:
        raise ValueError(f"{path}: no events to plot")
    t0 = min(e["ts"] for e in slices)
    order = {e["pid"]: e["args"]["sort_index"] for e in doc if e.get("ph") == "M" and e.get("name") == "process_sort_index"}
    rows = sorted({(e["pid"], e["cat"]) for e in slices}, key=lambda r: (order.get(r[0], 0), r[0], r[1]))[::-1]
    fig, ax = plt.subplots(figsize=(width, 1.0 + 0.6 * len(rows)))
    colors = {"op": "tab:blue", "sync": "tab:red", "dispatcher": "tab:cyan", "program": "lightgray",
              "kernel": "tab:green", "region": "tab:purple", "collective": "tab:orange", "p2p": "tab:brown",
              "fetch": "tab:pink", "compile": "tab:olive", "gpu": "darkgreen", "flush": "tab:gray"}
    for y, (pid, category) in enumerate(rows):
        bars = [((e["ts"] - t0) / 1e3, max(e["dur"] / 1e3, 1e-3)) for e in slices
                if e["pid"] == pid and e["cat"] == category]
        ax.broken_barh(bars, (y - 0.4, 0.8), facecolors=colors.get(category, "tab:gray"))
    ax.set_yticks(range(len(rows)), [f"{names.get(pid, pid)}: {category}" for pid, category in rows])
    ax.set_xlabel("ms since the first event")
    ax.set_title(os.path.basename(path))
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return len(slices)


def kineto_available():
    """False: GT's profiler records through its own client and workers, not PyTorch's Kineto."""
    return False
