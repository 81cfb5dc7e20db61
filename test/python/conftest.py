"""Shared pytest fixtures and the one numerical check helper."""
import os
import subprocess

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Every dispatcher the tests start (and every job they run) verifies the IR after each pass:
# a pass that makes invalid IR fails the test that reaches it.
os.environ.setdefault("GT_VERIFY_PASSES", "1")
import gt  # noqa: E402
from gt import _runtime  # noqa: E402


def check(actual, expected, atol=1e-5, rtol=1e-4, label="value"):
    """Compares a GT result (Tensor or array) with a NumPy float64 reference; on failure prints
    the first mismatches and the max difference."""
    a = actual.numpy() if isinstance(actual, gt.Tensor) else np.asarray(actual)
    e = np.asarray(expected)
    assert a.shape == e.shape, f"{label}: shape {a.shape} != expected {e.shape}"
    if a.dtype == np.bool_ or e.dtype == np.bool_:
        assert np.array_equal(a, e), f"{label}: {a} != {e}"
        return
    bad = ~np.isclose(a.astype(np.float64), e.astype(np.float64), atol=atol, rtol=rtol, equal_nan=True)
    if bad.any():
        idx = np.argwhere(bad)[:5]
        pairs = ", ".join(f"{tuple(i)}: {a[tuple(i)]} vs {e[tuple(i)]}" for i in idx)
        raise AssertionError(f"{label}: {bad.sum()} mismatches, maxdiff {np.abs(a - e).max():.3e}; {pairs}")


class Daemons:
    """A dispatcher and workers of our own (not the auto-started ones). `env` reaches both (and
    the clients' token: GT_TOKEN); `dispatcher_args` / `worker_args` are extra flags; `bindir`
    where the binaries are ("": the commands on `env`'s PATH; default: the package's)."""

    def __init__(self, workers=1, env=None, dispatcher_args=(), worker_args=(), host="127.0.0.1", tls_ca="", token=None,
                 bindir=None):
        bindir = _runtime.bin_dir() if bindir is None else bindir
        self.env = dict(os.environ, **(env or {}))
        self.host, self.tls_ca = host, tls_ca
        self.token = self.env.get("GT_TOKEN", "") if token is None else token
        self.dispatcher = subprocess.Popen([os.path.join(bindir, "gt-dispatcher"), "-p", "0", *dispatcher_args],
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env)
        line = self.dispatcher.stdout.readline()
        assert "listening on" in line, line + self.dispatcher.stderr.read()
        self.port = int(line.rsplit(":", 1)[1])
        self.workers = [subprocess.Popen([os.path.join(bindir, "gt-worker"), "--host", host, "-p", str(self.port),
                                          *worker_args],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self.env)
                        for _ in range(workers)]
        probe = self.client()
        import time
        deadline = time.time() + 30
        while probe.num_workers() < workers:
            assert time.time() < deadline, "workers did not register"
            time.sleep(0.01)
        del probe

    def client(self, timeout=5.0):
        return gt._C.Client(self.host, self.port, self.token, timeout, self.tls_ca)

    def dispatcher_rss(self):
        """The dispatcher's resident memory, bytes."""
        with open(f"/proc/{self.dispatcher.pid}/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))

    def stop(self):
        for p in self.workers + [self.dispatcher]:
            if p.poll() is None:
                p.kill()
            p.wait()


@pytest.fixture
def daemons():
    d = Daemons()
    yield d
    d.stop()
