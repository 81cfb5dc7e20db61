"""gt top, driven in tmux against running daemons with two client processes."""
import os
import re
import shlex
import subprocess
import sys
import sysconfig
import time

import numpy as np
import pytest

from gt import _C
from conftest import Daemons

SCRIPTS = sysconfig.get_path("scripts")

# A client of its own process (a researcher's script): ops until told how long.
CLIENT = """
import sys, time, gt
gt.connect(sys.argv[1])
x = gt.ones(4096)
end = time.time() + float(sys.argv[2])
while time.time() < end:
    for _ in range(20):
        x = (x * 1.0001).tanh()
    x.numpy()
"""


def table_rows(screen):
    """The cells of each row of the rich table on `screen`."""
    return [[c.strip() for c in line.split("│")[1:-1]] for line in screen.splitlines() if line.startswith("│")]


class Tmux:
    """One tmux server of our own (-L), running `command` in a 200x50 window."""

    def __init__(self, command):
        self.socket = f"gt-top-test-{os.getpid()}"
        subprocess.run(["tmux", "-L", self.socket, "new-session", "-d", "-s", "top", "-x", "200", "-y", "50", command],
                       check=True, timeout=10)

    def screen(self):
        return subprocess.run(["tmux", "-L", self.socket, "capture-pane", "-p", "-t", "top"], capture_output=True,
                              text=True, timeout=10).stdout

    def keys(self, keys):
        subprocess.run(["tmux", "-L", self.socket, "send-keys", "-t", "top", keys], check=True, timeout=10)

    def alive(self):
        return subprocess.run(["tmux", "-L", self.socket, "has-session", "-t", "top"], capture_output=True).returncode == 0

    def wait_for(self, predicate, seconds=20):
        deadline = time.time() + seconds
        while time.time() < deadline:
            screen = self.screen()
            if predicate(screen):
                return screen
            time.sleep(0.2)
        raise AssertionError("gt top's screen never showed what was expected:\n" + self.screen())

    def kill(self):
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=10)


@pytest.fixture
def busy():
    """Daemons with two workers, each worker busy with a client process of its own."""
    d = Daemons(workers=2)
    clients = [subprocess.Popen([sys.executable, "-c", CLIENT, f"127.0.0.1:{d.port}", "40"]) for _ in range(2)]
    yield d, clients
    for c in clients:
        c.kill()
        c.wait()
    d.stop()


def test_gt_top_shows_both_sessions_and_workers_and_its_numbers_move(busy):
    d, clients = busy
    env = f"PATH={shlex.quote(SCRIPTS + os.pathsep + os.environ['PATH'])} COLUMNS=200"
    tmux = Tmux(f"env {env} gt top 127.0.0.1:{d.port} --interval 0.5")
    try:
        # The workers view: both workers, and a kernel rate above zero once the clients run.
        def workers_busy(screen):
            rows = [r for r in table_rows(screen) if len(r) == 15 and r[1] == "cpu"]
            return len(rows) == 2 and any(float(r[5].replace(",", "")) > 0 for r in rows)
        screen = tmux.wait_for(workers_busy)
        assert "workers (sorted by index)" in screen and "2 workers" in screen
        assert [r[0] for r in table_rows(screen) if len(r) == 15] == ["0", "1"]

        # The clients view: both client processes by pid, both issuing ops.
        tmux.keys("c")
        pids = [f":{c.pid}" for c in clients]

        def clients_busy(screen):
            rows = {r[1]: r for r in table_rows(screen) if len(r) == 9}
            named = [next((r for name, r in rows.items() if name.endswith(pid)), None) for pid in pids]
            return all(r is not None and float(r[2].replace(",", "")) > 0 for r in named)
        first = tmux.wait_for(clients_busy)
        assert "clients (sorted by id)" in first
        later = tmux.wait_for(lambda s: clients_busy(s) and table_rows(s) != table_rows(first))

        # s sorts by the next column, w goes back, q quits.
        tmux.keys("s")
        tmux.wait_for(lambda s: "clients (sorted by ops/s)" in s)
        tmux.keys("w")
        tmux.wait_for(lambda s: "workers (sorted by index)" in s)
        tmux.keys("q")
        deadline = time.time() + 10
        while tmux.alive() and time.time() < deadline:
            time.sleep(0.1)
        assert not tmux.alive(), "gt top did not quit on q"
        assert later
    finally:
        tmux.kill()


def test_monitor_names_sessions_and_counts_their_work_and_errors(daemons):
    c = daemons.client()
    x, _, _ = c.upload(np.ones(8, np.float32), [8], 0)
    y = c.emit(_C.op_code("exp"), [x])[0]
    c.fetch(y)
    with pytest.raises(RuntimeError, match="does not exist"):
        c.fetch(12345)
    reading = _C.Monitor("127.0.0.1", daemons.port, daemons.token).poll()
    (s,) = reading["sessions"]
    assert re.fullmatch(r".+@.+:%d" % os.getpid(), s["label"])
    assert s["instructions"] == 2 and s["upload_bytes"] == 32 and s["fetch_bytes"] == 32
    assert s["errors"] == 1 and "tensor 12345 does not exist" in s["last_error"]
    (w,) = reading["workers"]
    assert w["alive"] and w["answered"] and w["device"] == "cpu"
    assert set(w["sessions"]) == {s["id"]} and w["sessions"][s["id"]][1] == 64  # x and y, held there
    assert reading["dispatcher"]["dispatcher_sessions"] == 1
    del c
    deadline = time.time() + 10  # the session ends when its client goes
    while _C.Monitor("127.0.0.1", daemons.port, daemons.token).poll()["sessions"] and time.time() < deadline:
        time.sleep(0.05)
    assert _C.Monitor("127.0.0.1", daemons.port, daemons.token).poll()["sessions"] == []


def test_monitor_wants_a_client_token():
    d = Daemons(env={"GT_TOKEN": "s3cret"})
    try:
        with pytest.raises(ConnectionError, match="GT_TOKEN"):
            _C.Monitor("127.0.0.1", d.port, "wrong").poll()
        assert _C.Monitor("127.0.0.1", d.port, "s3cret").poll()["dispatcher"]["workers"] == 1
        out = subprocess.run([os.path.join(SCRIPTS, "gt"), "top", f"127.0.0.1:{d.port}", "--once", "--interval", "0.1"],
                             env=dict(os.environ, GT_TOKEN="s3cret", COLUMNS="200"), capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stderr
        assert "1 workers" in out.stdout and "workers (sorted by index)" in out.stdout
    finally:
        d.stop()
