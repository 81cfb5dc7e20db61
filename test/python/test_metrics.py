"""Prometheus metrics: gt-dispatcher --metrics-port and gt-worker --metrics-port, scraped by a
real Prometheus server (Debian's `prometheus`, installed by install-deps) on loopback."""
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import numpy as np

from gt import _C
from conftest import Daemons


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port):
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()


def value(text, series):
    """The value of `series` (name{labels} exactly as exposed) in Prometheus' text format."""
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return None


def work(c, n=50):
    x, _, _ = c.upload(np.ones(64, np.float32), [64], 0)
    for _ in range(n):
        x = c.emit(_C.op_code("exp"), [c.emit(_C.op_code("neg"), [x])[0]])[0]
    c.fetch(x)


def test_the_daemons_expose_conventional_metrics_and_sessions_come_and_go():
    dport, wport = free_port(), free_port()
    d = Daemons(dispatcher_args=["--metrics-port", str(dport)], worker_args=["--metrics-port", str(wport)])
    try:
        c = d.client()
        work(c)
        time.sleep(1.5)  # the dispatcher publishes every second
        text = scrape(dport)
        for name, kind in [("gt_instructions_total", "counter"), ("gt_plan_cache_hits_total", "counter"),
                           ("gt_dispatch_seconds_total", "counter"), ("gt_sessions", "gauge"), ("gt_workers", "gauge"),
                           ("gt_errors_total", "counter"), ("gt_session_instructions_total", "counter")]:
            assert f"# TYPE {name} {kind}" in text, name
        assert value(text, "gt_instructions_total") == 101
        assert value(text, "gt_workers") == 1 and value(text, "gt_sessions") == 1
        assert value(text, 'gt_errors_total{kind="fetch"}') == 0
        label = next(line for line in text.splitlines() if line.startswith("gt_session_instructions_total{"))
        assert f':{os.getpid()}"' in label and label.endswith(" 101")
        worker = scrape(wport)
        ops = value(worker, 'gt_worker_ops_total{how="eager"}') + value(worker, 'gt_worker_ops_total{how="fused"}')
        assert ops == 101  # the upload and the 100 ops
        assert value(worker, "gt_worker_live_bytes") > 0 and value(worker, "gt_worker_busy_seconds_total") > 0
        assert "# TYPE gt_worker_kernels_run_total counter" in worker
        del c  # its session ends, and its series with it: labels are bounded by the live sessions
        deadline = time.time() + 10
        while "gt_session_instructions_total{" in scrape(dport) and time.time() < deadline:
            time.sleep(0.2)
        assert "gt_session_instructions_total{" not in scrape(dport)
    finally:
        d.stop()


def test_a_busy_metrics_port_stops_the_daemon_with_a_clear_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        from gt import _runtime
        out = subprocess.run([os.path.join(_runtime.bin_dir(), "gt-dispatcher"), "-p", "0", "--metrics-port", str(port)],
                             capture_output=True, text=True, timeout=30)
    assert out.returncode != 0
    assert f"cannot serve metrics on 127.0.0.1:{port}" in out.stderr


def test_a_prometheus_server_scrapes_both_daemons_and_sees_instructions_rise(tmp_path):
    prometheus = shutil.which("prometheus")
    assert prometheus, "Debian's prometheus is not installed: run scripts/install-deps.sh"
    dport, wport, pport = free_port(), free_port(), free_port()
    d = Daemons(dispatcher_args=["--metrics-port", str(dport)], worker_args=["--metrics-port", str(wport)])
    config = tmp_path / "prometheus.yml"
    config.write_text(f"""global:
  scrape_interval: 1s
scrape_configs:
  - job_name: gt-dispatcher
    static_configs: [{{targets: ["127.0.0.1:{dport}"]}}]
  - job_name: gt-worker
    static_configs: [{{targets: ["127.0.0.1:{wport}"]}}]
""")
    log = open(tmp_path / "prometheus.log", "w")
    server = subprocess.Popen([prometheus, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
                               f"--web.listen-address=127.0.0.1:{pport}"], stdout=log, stderr=log)

    def query(q):
        url = f"http://127.0.0.1:{pport}/api/v1/query?" + urllib.parse.urlencode({"query": q})
        try:
            reply = json.loads(urllib.request.urlopen(url, timeout=5).read())
        except OSError:
            return None  # not up yet
        results = reply["data"]["result"]
        return float(results[0]["value"][1]) if results else None

    try:
        c = d.client()
        seen = []
        deadline = time.time() + 60
        while time.time() < deadline and not (len(seen) >= 2 and seen[-1] > seen[0]):
            work(c, 20)
            v = query("gt_instructions_total")
            if v is not None and (not seen or v != seen[-1]):
                seen.append(v)
            time.sleep(0.5)
        assert len(seen) >= 2 and seen[-1] > seen[0], (seen, (tmp_path / "prometheus.log").read_text()[-2000:])
        assert query('up{job="gt-dispatcher"}') == 1 and query('up{job="gt-worker"}') == 1
        deadline = time.time() + 20
        while not query("gt_worker_kernels_run_total") and time.time() < deadline:
            time.sleep(0.5)
        assert query("gt_worker_kernels_run_total") > 0
    finally:
        server.kill()
        server.wait()
        log.close()
        d.stop()
