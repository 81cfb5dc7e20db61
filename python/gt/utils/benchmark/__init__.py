"""torch.utils.benchmark for GT: time a statement the way PyTorch's Timer does, counting the work
GT's workers do, not just the time to issue it.

    from gt.utils.benchmark import Timer
    t = Timer("x @ y", globals={"x": x, "y": y})
    print(t.blocked_autorange())       # median, IQR, number of measurements

GT runs ops asynchronously (the client issues, workers compute later), as CUDA does for
PyTorch; so, like PyTorch's timer on a GPU (which calls torch.cuda.synchronize), every
measured block ends with gt.synchronize(): a block's time covers its ops' execution. Each
measurement runs the statement `number` times, then synchronizes, and reports the time per run.

Timer(stmt, setup, global_setup, timer, globals, label, sub_label, description, env,
num_threads, language) with timeit(number), repeat(repeat, number), autorange(),
blocked_autorange(min_run_time) and adaptive_autorange(threshold, min_run_time, max_run_time);
as PyTorch's, `torch` (gt) is in a statement's globals unless given. Measurement (mean, median,
iqr, times, raw_times, number_per_run, and its task's stmt, label, sub_label, description, env,
num_threads; picklable, and Measurement.merge) and Compare(measurements).print(): a table per
label, a block per thread count, a row per (env, sub_label), a column per description.
num_threads is recorded, not applied: a worker's threads are its own (gt-worker --threads).
"""
import collections
import enum
import statistics
import textwrap
import time
import timeit as _timeit

__all__ = ["Timer", "Measurement", "Compare", "Language", "TaskSpec"]


class Language(enum.Enum):
    """The language of a Timer's statement: GT times Python only."""
    PYTHON = 0
    CPP = 1


def _sync():
    import gt
    if gt._runtime._client is not None:  # (nothing to wait for before the first op)
        gt.synchronize()


def timer():
    """Seconds, after waiting for the work issued so far (the default `timer` of Timer)."""
    _sync()
    return time.perf_counter()


TaskSpec = collections.namedtuple("TaskSpec", "stmt setup global_setup label sub_label description env num_threads")


class Measurement:
    """The times of a Timer's measurements: raw_times[i] seconds for number_per_run runs."""

    def __init__(self, number_per_run, raw_times, task_spec, metadata=None):
        self.number_per_run = number_per_run
        self.raw_times = list(raw_times)
        self.task_spec = task_spec
        self.metadata = metadata

    def __getattr__(self, name):  # the task's fields: m.stmt, m.label, m.num_threads, ...
        if name in TaskSpec._fields and "task_spec" in self.__dict__:
            return getattr(self.task_spec, name)
        raise AttributeError(f"'Measurement' object has no attribute '{name}'")

    @staticmethod
    def merge(measurements):
        """One Measurement per task of `measurements` (their times together), as PyTorch's."""
        by_task = {}
        for m in measurements:
            by_task.setdefault(m.task_spec, []).append(m)
        merged = []
        for spec, ms in by_task.items():
            raw = [t / m.number_per_run for m in ms for t in m.raw_times]
            merged.append(Measurement(1, raw, spec, ms[0].metadata))
        return merged

    @property
    def times(self):
        """Seconds per run of each measurement."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def mean(self):
        return statistics.fmean(self.times)

    @property
    def median(self):
        return statistics.median(self.times)

    @property
    def iqr(self):
        if len(self.times) < 2:
            return 0.0
        q = statistics.quantiles(self.times, n=4, method="inclusive")
        return q[2] - q[0]

    @property
    def title(self):
        spec = self.task_spec
        return spec.label or spec.description or spec.stmt

    @property
    def significant_figures(self):
        """Digits of the median that the spread leaves meaningful (at most 4), as PyTorch's."""
        import math
        if len(self.times) < 2 or self.median == 0:
            return 1
        n = len(self.times)
        spread = statistics.stdev(self.times) / math.sqrt(n)
        if spread <= 0:
            return 4
        return max(1, min(4, int(math.floor(math.log10(abs(self.median) / spread))) + 1))

    def __repr__(self):
        scale, unit = _unit(self.median)
        lines = [f"<gt.utils.benchmark.Measurement object at {hex(id(self))}>"]
        if self.task_spec.label:
            lines.append(self.task_spec.label)
        if self.task_spec.sub_label or self.task_spec.description:
            lines.append(": ".join(x for x in (self.task_spec.sub_label, self.task_spec.description) if x))
        lines.append(textwrap.indent(self.task_spec.stmt, "  ") if "\n" in self.task_spec.stmt else self.task_spec.stmt)
        if len(self.times) > 1:
            q = statistics.quantiles(self.times, n=4, method="inclusive")
            lines.append(f"  Median: {self.median / scale:.2f} {unit}")
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({q[0] / scale:.2f} to {q[2] / scale:.2f})")
        else:
            lines.append(f"  {self.median / scale:.2f} {unit}")
        lines.append(f"  {len(self.times)} measurement{'s' if len(self.times) != 1 else ''}, "
                     f"{self.number_per_run} runs per measurement, {self.task_spec.num_threads} thread"
                     f"{'s' if self.task_spec.num_threads != 1 else ''}")
        return "\n".join(lines)


def _unit(seconds):
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        if abs(seconds) >= scale:
            return scale, unit
    return 1e-9, "ns"


class Timer:
    """Times `stmt` (a string of Python, run with `globals`, after `setup` once) or a callable."""

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=timer, globals=None, label=None,
                 sub_label=None, description=None, env=None, num_threads=1, language="python"):
        if language not in ("python", "py", Language.PYTHON):
            raise ValueError(f"gt.utils.benchmark.Timer times Python statements, not {language!r}")
        if not isinstance(stmt, str):
            raise ValueError("Timer: stmt must be a string of Python (use globals= for the names it uses)")
        self._spec = TaskSpec(textwrap.dedent(stmt).strip() or "pass", textwrap.dedent(setup).strip() or "pass",
                               global_setup, label, sub_label, description, env, num_threads)
        import gt
        self._globals = dict(globals or {})
        self._globals.setdefault("torch", gt)  # as PyTorch's Timer: `torch.` in stmt and setup
        exec(global_setup or "pass", self._globals)
        self._timer = _timeit.Timer(stmt=self._spec.stmt, setup=self._spec.setup, timer=timer, globals=self._globals)

    def _measure(self, number):
        return self._timer.timeit(number)  # timer() at both ends: the end waits for the work

    def timeit(self, number=1000000):
        """One measurement of `number` runs (after one warm-up run)."""
        self._measure(1)
        return Measurement(number, [self._measure(number)], self._spec)

    def repeat(self, repeat=-1, number=-1):
        raise NotImplementedError("Timer.repeat: use blocked_autorange or timeit (as PyTorch suggests)")

    def _runs_per_block(self, min_run_time):
        """Runs per block: after a warm-up run, the fewest (1, 10, 100, ...) for which the timer
        itself (the synchronization that ends a block, measured with no run) is at most 1 % of
        a block of at least min_run_time / 100 seconds, or a block takes min_run_time / 2."""
        self._measure(1)
        overhead = statistics.median(self._measure(0) for _ in range(5))
        number = 1
        while number < 10 ** 9:
            t = self._measure(number)
            if (overhead <= 0.01 * t and t >= min_run_time / 100) or t > min_run_time / 2:
                break
            number *= 10
        return number

    def autorange(self, callback=None):
        """One measurement of the fewest runs (1, 2, 5, 10, 20, ...) that take at least 0.2 s."""
        for exponent in range(10):
            for factor in (1, 2, 5):
                number = factor * 10 ** exponent
                t = self._measure(number)
                if callback:
                    callback(number, t)
                if t >= 0.2:
                    return Measurement(number, [t], self._spec)
        return Measurement(number, [t], self._spec)

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        """Blocks of runs (runs per block found first, see _runs_per_block) until min_run_time
        seconds were spent: one measurement per block."""
        number, times = self._runs_per_block(min_run_time), []
        while sum(times) < min_run_time or not times:
            times.append(self._measure(number))
            if callback:
                callback(number, times[-1])
        return Measurement(number, times, self._spec)

    def adaptive_autorange(self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0, callback=None):
        """Blocks until the IQR is below `threshold` times the median (after min_run_time
        seconds) or max_run_time seconds have passed."""
        number, times = self._runs_per_block(min_run_time), []
        while True:
            times.append(self._measure(number))
            if callback:
                callback(number, times[-1])
            m = Measurement(number, times, self._spec)
            spent = sum(times)
            if spent >= max_run_time or (spent >= min_run_time and len(times) >= 3 and m.iqr <= threshold * m.median):
                return m


class Compare:
    """A table of Measurements, as PyTorch's: one per label, a block per thread count (when
    they differ), rows by (env, sub_label), columns by description; medians."""

    def __init__(self, results):
        self._results = list(results)
        self._colorize = False
        self._trim = False

    def colorize(self, rowwise=False):
        self._colorize = True

    def trim_significant_figures(self):
        self._trim = True

    def highlight_warnings(self):
        pass

    def extend_results(self, results):
        self._results.extend(results)

    def __str__(self):
        results = Measurement.merge(self._results)
        if not results:
            return ""
        scale, unit = _unit(min(m.median for m in results))
        out = []
        for label in dict.fromkeys(m.task_spec.label or "" for m in results):
            group = [m for m in results if (m.task_spec.label or "") == label]
            columns = list(dict.fromkeys(m.task_spec.description or "" for m in group))
            threads = list(dict.fromkeys(m.task_spec.num_threads for m in group))
            envs = len({m.task_spec.env for m in group}) > 1

            def row_name(m):
                name = m.task_spec.sub_label or m.task_spec.stmt
                return f"({m.task_spec.env}) {name}" if envs else name
            cells = {(m.task_spec.num_threads, row_name(m), m.task_spec.description or ""): m for m in group}
            names = list(dict.fromkeys(row_name(m) for m in group))
            digits = 1 if not self._trim else 0
            values = {k: f"{m.median / scale:.{digits}f}" for k, m in cells.items()}
            width = max(len(n) for n in names) + 8
            col_w = [max(len(c), *(len(v) for (_, _, cc), v in values.items() if cc == c)) + 2 for c in columns]
            header = " " * width + "|" + "|".join(f"{c:^{w}}" for c, w in zip(columns, col_w))
            title = f" {label} " if label else ""
            out.append("[" + title.center(len(header) - 2, "-") + "]")
            out.append(header)
            for t in threads:
                if len(threads) > 1:
                    out.append(f"{t} threads: ".ljust(len(header), "-"))
                for n in names:
                    if not any((t, n, c) in cells for c in columns):
                        continue
                    out.append(f"      {n}".ljust(width) + "|" +
                               "|".join(f"{values.get((t, n, c), ''):^{w}}" for c, w in zip(columns, col_w)))
            out.append("")
        units = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}
        out.append(f"Times are in {units[unit]} ({unit}).")
        return "\n".join(out)

    def print(self):
        print(str(self))
