"""The session: the connection to a dispatcher (auto-started local daemons, or
`gt.connect("host:port")`), and the named signals that apply to its instructions (their
public API is gt.signal)."""
import atexit
import contextlib
import ctypes
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from . import _C

_C.set_package_dir(os.path.dirname(os.path.abspath(__file__)) + os.sep)

_client = None        # the session's _C.Client
_processes = []       # daemons this process started
_num_workers = int(os.environ.get("GT_WORKERS", "1"))
_log_dir = None
_keep_logs = False  # a daemon failed: its log folder stays after exit
_token = None         # the auto-started dispatcher's client token (made per run)
_port = None          # the auto-started dispatcher's port
_unix_path = None     # the auto-started dispatcher's Unix socket (None: clients use its port)
_signals = []         # (name, backward) of the active gt.signal contexts, innermost last
_configured = None    # the signal names the session's config defines (None: no config loaded)


def _is_script(path):
    with open(path, "rb") as f:
        return f.read(2) == b"#!"


def bin_dir():
    """Where gt-dispatcher and gt-worker live: $GT_BIN_DIR, gt/bin beside this package, or PATH."""
    if os.environ.get("GT_BIN_DIR"):
        return os.environ["GT_BIN_DIR"]
    for package_dir in (os.path.dirname(os.path.abspath(__file__)), os.path.dirname(_C.__file__)):
        here = os.path.join(package_dir, "bin")  # an installed package carries its daemons here
        if os.path.exists(os.path.join(here, "gt-dispatcher")):
            return here
    found = shutil.which("gt-dispatcher")
    if found and not _is_script(found):  # not gt/_commands.py's wrapper, which comes here
        return os.path.dirname(found)
    raise RuntimeError("gt-dispatcher not found: install GT (make build) or set GT_BIN_DIR")


def _die_with_parent():
    # Linux: the daemon gets SIGTERM when the Python process that started it dies.
    try:
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def worker_device(index):
    """The --device of auto-started worker `index`: from $GT_DEVICE ("cpu", the default, or
    "cuda": worker i gets GPU i; "cuda:N" pins every worker to GPU N)."""
    device = os.environ.get("GT_DEVICE", "cpu")
    return f"cuda:{index}" if device == "cuda" else device


def worker_threads(num_workers):
    """Threads of each auto-started CPU worker (its GEMMs' and fused kernels'): $GT_WORKER_THREADS,
    else None (the libraries' default, or the user's $OMP_NUM_THREADS, $MKL_NUM_THREADS or
    $OPENBLAS_NUM_THREADS) when one of those is set or there is one worker, else the cores this
    process may use divided among the workers (at least 1). Waiting threads spin for a while,
    so workers sharing a machine must not each take every core (torchrun sets
    OMP_NUM_THREADS=1 for the same reason)."""
    if os.environ.get("GT_WORKER_THREADS"):
        value = os.environ["GT_WORKER_THREADS"]
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"GT_WORKER_THREADS must be a positive integer, got {value!r}")
        return int(value)
    if num_workers == 1 or any(os.environ.get(v) for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // num_workers)


def executor_cpu(num_workers):
    """The CPU an auto-started CPU worker pins its executor thread to (gt-worker --executor-cpu),
    or None: the last CPU this process may use when one CPU worker runs beside it and there are
    at least two, unless GT_PIN_EXECUTOR=0. The dispatcher then keeps to the other CPUs (as
    does the worker's RPC thread): the hops of a step (this process's batch arriving, an
    answer leaving) never wait for the core a kernel holds, and the executor keeps its caches.
    On the 2-core development machine the MLP step went from 1.99-2.11 to 1.74-1.83 ms
    (benchmarks/RESULTS.md, session 46)."""
    if num_workers != 1 or worker_device(0) != "cpu" or os.environ.get("GT_PIN_EXECUTOR") == "0":
        return None
    if not hasattr(os, "sched_getaffinity"):
        return None
    cpus = os.sched_getaffinity(0)
    return max(cpus) if len(cpus) >= 2 else None


def idle_spin_us():
    """How long (microseconds) a pinned auto-started worker's executor polls for the next batch
    before it sleeps (gt-worker --idle-spin-us): GT_IDLE_SPIN_US, else 2000. Its core is its own
    (executor_cpu), and a sleeping executor on an idle virtual CPU started the next batch 50-100 us
    later (char_gpt generation 2.96-3.78 -> 2.48-2.74 ms per token; benchmarks/RESULTS.md, session 47)."""
    value = os.environ.get("GT_IDLE_SPIN_US", "2000")
    try:
        us = int(value)
    except ValueError:
        raise ValueError(f"GT_IDLE_SPIN_US={value!r}: expected microseconds, a whole number from 0 to 1000000") from None
    if not 0 <= us <= 1_000_000:
        raise ValueError(f"GT_IDLE_SPIN_US={value!r}: expected microseconds, a whole number from 0 to 1000000")
    return us


def worker_memory(num_workers):
    """--memory of each auto-started CPU worker when several share this machine: 4/5 of the
    memory available now, divided among them (None for one worker: it measures for itself)."""
    if num_workers == 1:
        return None
    try:
        with open("/proc/meminfo") as f:
            available = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration):
        return None
    return available * 4 // 5 // num_workers


def start_local(num_workers=1, verbose=False):
    """Starts a dispatcher on an ephemeral loopback port and `num_workers` workers on the
    devices $GT_DEVICE names (see worker_device); CPU workers split the cores (see
    worker_threads) and the memory (see worker_memory). The daemons get random client and
    worker tokens made for this run (no other process can join them), and one session may use
    all of each worker's memory (the session is this process's alone).

    One CPU worker pins its executor thread to a CPU of its own and the dispatcher keeps to the
    others (see executor_cpu).

    Workers get OPENBLAS_THREAD_TIMEOUT=4 unless it is set: their BLAS threads sleep right
    after a GEMM instead of spinning on the cores this process needs.

    Returns the port. Daemon output goes to a log folder in the temp directory (or to the
    terminal when GT_VERBOSE=1), removed at exit unless a daemon failed. Raises RuntimeError if they do not come up within 60 s.
    """
    global _log_dir, _token, _port, _unix_path, _keep_logs
    threads = worker_threads(num_workers)  # a bad GT_WORKER_THREADS fails before anything starts
    verbose = verbose or os.environ.get("GT_VERBOSE") == "1"
    _log_dir = _log_dir or tempfile.mkdtemp(prefix="gt-")
    _token = secrets.token_hex(32)
    env = dict(os.environ, GT_TOKEN=_token, GT_WORKER_TOKEN=secrets.token_hex(32))
    for name in ("GT_TLS_CERT", "GT_TLS_KEY", "GT_TLS_CA"):  # loopback daemons of our own: no TLS
        env.pop(name, None)
    out = None if verbose else open(os.path.join(_log_dir, "dispatcher.log"), "w")
    # This process and the workers connect over a Unix socket in the private log folder: a
    # round trip through the dispatcher skips the TCP stack (about 20 % faster on loopback).
    # The TCP port stays open for everyone else (gt top, GT_SERVER, other hosts' workers).
    sock = os.path.join(_log_dir, "dispatcher.sock")
    _unix_path = sock if len(os.fsencode(sock)) < 100 else None  # sun_path holds 108 bytes
    argv = [os.path.join(bin_dir(), "gt-dispatcher"), "-p", "0"] + (["--unix", sock] if _unix_path else [])
    pinned = executor_cpu(num_workers)

    def dispatcher_setup():
        _die_with_parent()
        if pinned is not None:  # the executor's core is the worker's alone
            os.sched_setaffinity(0, os.sched_getaffinity(0) - {pinned})
    d = subprocess.Popen(argv, stdout=subprocess.PIPE,
                         stderr=out, preexec_fn=dispatcher_setup, text=True, env=env)
    if out is not None:
        out.close()  # (the daemon has its own descriptor of the log)
    _processes.append(d)
    line = d.stdout.readline()
    if "listening on" not in line:
        why = ""
        if out is not None:  # it exited: its last words (e.g. a bad GT_BUCKET_BYTES) say why
            try:
                d.wait(timeout=5)
                with open(out.name) as log:
                    why = ": " + log.read().strip().splitlines()[-1]
            except (subprocess.TimeoutExpired, IndexError):
                pass
        _keep_logs = True
        raise RuntimeError(f"gt-dispatcher did not start{why} (see {_log_dir}/dispatcher.log)")
    port = _port = int(line.rsplit(":", 1)[1])
    memory = worker_memory(num_workers)
    # OpenBLAS's threads spin (sched_yield) for up to 2^28 cycles after each GEMM before they
    # sleep; beside this process and the dispatcher that spinning takes the cores they need
    # (MLP step: 7.5-7.9 worker CPU-ms per step spinning, 4.1-4.7 without, the same wall time).
    # 2^4 cycles: they sleep at once and a GEMM wakes them.
    worker_env = dict(env)
    worker_env.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    for i in range(num_workers):
        wout = None if verbose else open(os.path.join(_log_dir, f"worker{i}.log"), "w")
        argv = [os.path.join(bin_dir(), "gt-worker"), "--host", local_host(), "-p", str(port), "--device", worker_device(i),
                "--session-memory", "100%"]
        reads = os.path.join(_log_dir, f"worker{i}.sock")
        if len(os.fsencode(reads)) < 100:  # this process reads its tensors there: one hop, not two
            argv += ["--listen", "unix:" + reads]
        if threads and worker_device(i) == "cpu":
            argv += ["--threads", str(threads)]
        if worker_device(i) == "cpu":  # this process issues its next step beside the worker's threads
            argv += ["--client-core"]
        if pinned is not None:
            argv += ["--executor-cpu", str(pinned), "--idle-spin-us", str(idle_spin_us())]
        if memory and worker_device(i) == "cpu":
            argv += ["--memory", str(memory)]
        w = subprocess.Popen(argv, stdout=wout, stderr=wout, preexec_fn=_die_with_parent, env=worker_env)
        if wout is not None:
            wout.close()
        _processes.append(w)
    return port


def local_host():
    """The host argument that reaches the auto-started dispatcher: "unix:PATH" of its socket,
    or 127.0.0.1 (its port) when the socket's path would be too long."""
    return "unix:" + _unix_path if _unix_path else "127.0.0.1"


def _stop_local():
    global _log_dir, _keep_logs
    for p in reversed(_processes):
        if p.poll() is None:
            p.terminate()
        elif p.returncode != 0:  # it died on its own: its log says why
            _keep_logs = True
    for p in _processes:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
        if p.stdout is not None:  # the dispatcher's, read for its port
            p.stdout.close()
    _processes.clear()
    # The log folder (logs and sockets) goes with the daemons, unless one failed.
    if _log_dir is not None and not _keep_logs:
        shutil.rmtree(_log_dir, ignore_errors=True)
        _log_dir = None


def _shutdown():
    global _client
    if _client is not None:
        try:
            _client.flush()
        except Exception:
            pass
    _client = None
    _stop_local()


atexit.register(_shutdown)


def connect(address, timeout=5.0):
    """Connects this process to a running dispatcher at "host:port" (or "unix:PATH", the socket
    of a dispatcher started with --unix PATH), presenting $GT_TOKEN; over TLS when $GT_TLS_CA
    names the certificate(s) to trust (use the host name the dispatcher's certificate names).

    Raises ConnectionError (within `timeout` seconds) if nothing answers there or the token or
    certificate is refused, ValueError for an address of neither form, and RuntimeError if this
    process already has a session.
    """
    global _client
    if address.startswith("unix:") and len(address) > len("unix:"):
        host, port = address, "0"
    else:
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit() or host == "unix":
            raise ValueError(f"gt.connect expects 'host:port' or 'unix:PATH', got {address!r}")
    if _client is not None:
        raise RuntimeError("gt is already connected; call gt.connect() before the first tensor op")
    _client = _C.Client(host, int(port), os.environ.get("GT_TOKEN", ""), timeout, os.environ.get("GT_TLS_CA", ""))
    _on_session_open()
    return _client


def flush():
    """Sends the instructions this process issued and has not sent yet, without waiting for
    them to run (nothing to do before the session opens). The client also sends by itself
    every 2048 instructions (GT_WORKER_BATCH_SIZE) and at every sync point."""
    if _client is not None:
        _client.flush()


def gpu_workers(n):
    """Sets how many local workers the auto-started runtime gets (before the first tensor op)."""
    global _num_workers
    if _client is not None:
        raise RuntimeError("gt.gpu_workers() must be called before the first tensor op")
    if n < 1:
        raise ValueError(f"gt.gpu_workers needs at least 1 worker, got {n}")
    _num_workers = n


# Background compiles (docs/jit.md): said once on stderr when they make the first steps slow,
# and once when they are done. GT_QUIET=1 keeps quiet.
_compile_notice = {"said": 0, "done": False, "checked": 0.0}


def after_wait(seconds):
    """Called after each wait for values (`.numpy()`, `.item()`, `gt.synchronize()`) that took
    `seconds`. A slow one (over 0.2 s) asks the workers whether fused regions are compiling, at
    most once a second (one stats call); nothing else costs more than this check."""
    n = _compile_notice
    if n["done"] or (not n["said"] and seconds < 0.2) or _client is None:
        return
    now = time.monotonic()
    if now - n["checked"] < 1.0:
        return
    n["checked"] = now
    if os.environ.get("GT_QUIET") == "1":
        n["done"] = True
        return
    stats = _client.stats()
    compiling = stats.get("regions_compiling", 0)
    if not n["said"] and compiling:
        n["said"] = compiling
        _say(f"gt: compiling {compiling} fused region{'s' if compiling > 1 else ''} in the background; until one "
             "is ready, its ops run one kernel each (GT_JIT_SYNC=1 compiles first instead)...")
    elif n["said"] and not compiling:
        n["done"] = True
        _say(f"gt: background compiling done ({stats.get('regions_compiled', 0)} fused regions ready, "
             f"{stats.get('region_fallbacks', 0)} left op by op)")


def _say(line):
    """Prints a line on stderr; above the progress bars while tqdm draws some (tqdm.write), not
    through them."""
    tqdm = sys.modules.get("tqdm")
    bars = getattr(getattr(tqdm, "tqdm", None), "_instances", None)
    if bars:
        tqdm.tqdm.write(line, file=sys.stderr)
    else:
        print(line, file=sys.stderr)


def client():
    """The session, auto-starting local daemons on first use (or connecting to $GT_SERVER)."""
    global _client, _keep_logs
    if _client is not None:
        return _client
    if os.environ.get("GT_SERVER"):
        return connect(os.environ["GT_SERVER"])
    port = start_local(_num_workers)
    _client = _C.Client(local_host(), port, _token, 10.0)
    deadline = time.time() + 60
    while _client.num_workers() < _num_workers:
        if time.time() > deadline:
            _keep_logs = True
            raise RuntimeError(f"gt workers did not register within 60 s (logs: {_log_dir})")
        if any(p.poll() is not None for p in _processes):
            _keep_logs = True
            raise RuntimeError(f"a gt daemon exited during start-up{_last_log_line()} (logs: {_log_dir})")
        time.sleep(0.01)
    _on_session_open()
    return _client


# gt.compile: a config entry that makes the regions of ops issued under its signal hot at once
# (`compile: true`), appended to whatever config the session loads.
COMPILE_SIGNAL = "gt_compile"
_COMPILE_ENTRY = f"\n{COMPILE_SIGNAL}:\n  compile: true\n"
_compile_wanted = False
_config_source = ("", "")  # the (text, source) of the config the script loaded


def _with_compile_entry(text):
    return text + _COMPILE_ENTRY if _compile_wanted else text


def _load(c, text, source, auto):
    global _config_source
    _set_configured(c.load_config(_with_compile_entry(text), source, auto))
    _config_source = (text, source)  # (a config that failed to load is not kept)


def enable_compile_signal():
    """Makes sure the session's config has the gt.compile entry (loading it again with the entry
    appended, once)."""
    global _compile_wanted
    if _compile_wanted:
        return
    _compile_wanted = True
    c = client()
    text, source = _config_source
    _load(c, text, source or "gt.compile", _auto_shard_bytes(c))


def load_config(path):
    """Loads the sharding config (YAML) at `path` into this session: signals named in it now
    shard tensors and compute (see gt.signal). Opens the session if needed, so call
    gt.gpu_workers(n) first. $GT_CONFIG names a config loaded when the session opens.

    Raises FileNotFoundError if `path` cannot be read and ValueError naming the file and line
    of an invalid entry (unknown key, a worker that does not exist, missing axis, ...), or a
    bad $GT_AUTO_SHARD / $GT_AUTO_SHARD_BYTES (applied together with the config)."""
    with open(path) as f:
        text = f.read()
    c = client()
    _load(c, text, str(path), _auto_shard_bytes(c))


def _auto_shard_bytes(c):
    """$GT_AUTO_SHARD=1: tensors made outside any configured signal are split along axis 0 over
    all workers when they hold at least $GT_AUTO_SHARD_BYTES bytes (default 1 MiB), and
    replicated over all workers otherwise. Returns that size, or 0 when off (or one worker).
    Raises ValueError for a value that is not 0/1 or a positive byte count."""
    flag = os.environ.get("GT_AUTO_SHARD", "")
    if flag in ("", "0"):
        return 0
    if flag != "1":
        raise ValueError(f"GT_AUTO_SHARD must be 0 or 1, got {flag!r}")
    size = os.environ.get("GT_AUTO_SHARD_BYTES", str(1 << 20))
    if not size.isdigit() or int(size) <= 0:
        raise ValueError(f"GT_AUTO_SHARD_BYTES must be a positive number of bytes, got {size!r}")
    return int(size) if c.num_workers() > 1 else 0


session_open_hooks = []  # called with the new _C.Client once its session is open (gt.profiler's GT_TRACE)


def _on_session_open():
    """Applies what was set before the session existed: the active signal, $GT_CONFIG and
    $GT_AUTO_SHARD; then runs session_open_hooks."""
    for hook in session_open_hooks:
        hook(_client)
    name, _ = current_signal()
    if name:  # a signal entered before the session opened
        _client.set_signal(name, False)
    path = os.environ.get("GT_CONFIG")
    auto = _auto_shard_bytes(_client)
    if path:
        with open(path) as f:
            _load(_client, f.read(), path, auto)
    elif auto:
        _load(_client, "", "GT_AUTO_SHARD", auto)
    elif _compile_wanted:  # gt.compile ran before this session opened
        _load(_client, "", "gt.compile", auto)


# ---------------------------------------------------------------- the active signal

_signal_now = (None, None)  # current_signal(), worked out again by apply_signal() (ops read it)


def current_signal():
    """The signal that applies now, as (name, backward name or None): the innermost active
    signal the loaded config names (without a config: the innermost active signal), or
    (None, None)."""
    return _signal_now


def apply_signal():
    """After the active signals or the config changed: works out the signal that applies now
    and tells the session, whose next instructions carry it."""
    global _signal_now
    _signal_now = (None, None)
    for name, backward in reversed(_signals):
        if _configured is None or name in _configured:
            _signal_now = (name, backward)
            break
    if _client is not None:  # else the session applies it when it opens
        _client.set_signal(_signal_now[0] or "", False)


def _set_configured(names):
    """The signal names a newly loaded config defines."""
    global _configured
    _configured = frozenset(names)
    apply_signal()


def gradient_signal_of(node_signal):
    """The signal a node's gradient ops carry, as the session's (name, is_backward), given the
    (name, backward) that was current when the node's op ran: its `backward=`, or its own
    signal marked as a gradient so the config's `backward:` entry applies; ("", False) for a
    node without a signal."""
    if node_signal and node_signal[0]:
        name, backward = node_signal
        return (backward, False) if backward else (name, True)
    return ("", False)


@contextlib.contextmanager
def gradient_signals():
    """Inside autograd's backward pass: yields `use(node_signal)`, which makes the gradient ops
    issued next carry that node's signal (gradient_signal_of), telling the session only when it
    changes (consecutive nodes mostly share one); the session's signal is restored at the end.
    Nothing changes when neither the nodes nor the present have a signal."""
    c = client()
    previous = c.signal()
    last = [previous]

    def use(node_signal):
        s = gradient_signal_of(node_signal)
        if s != last[0]:
            c.set_signal(*s)
            last[0] = s
    try:
        yield use
    finally:
        if last[0] != previous:
            c.set_signal(*previous)


def _last_log_line():
    """': <the last line a daemon logged>' (why it exited), or '' when nothing was logged."""
    names = sorted(os.listdir(_log_dir)) if _log_dir else []
    for name in sorted(names, key=lambda n: not n.startswith("worker")):  # workers' reasons first
        try:
            with open(os.path.join(_log_dir, name)) as f:
                lines = [line.strip() for line in f if line.strip()]
        except OSError:
            continue
        if lines:
            return ": " + lines[-1]
    return ""


def run_daemon(name, argv):
    """`python -m gt.server` / `python -m gt.worker`: exec the C++ daemon with the same flags."""
    path = os.path.join(bin_dir(), name)
    os.execv(path, [path] + argv)
