"""gt top: a live view of a GT dispatcher, its workers and its client sessions, like htop.

    gt top [host:port]          (or python -m gt.top; default $GT_SERVER)
    gt top host:port --once     one reading, printed, for scripts

It reads the dispatcher's `monitor` call (gt.capnp), over a connection of its own: it opens no
session. A dispatcher with GT_TOKEN wants a client token ($GT_TOKEN or --token); TLS with
$GT_TLS_CA or --tls-ca, as for `gt.connect`.

Keys: q quit, w workers, c clients (sessions), s next sort column.

Rates (per second) and utilisation are the change between two readings over the time between
them; utilisation is a worker's execution time over wall time (its scheduler's busy time, so
a unit still running counts when it ends). Needs `rich` (installed by `make build`; or
`pip install gt[top]`).
"""
import argparse
import os
import select
import sys
import time

WORKER_SORTS = ["index", "util", "queue", "kernels/s", "live"]
CLIENT_SORTS = ["id", "ops/s", "share", "uploaded", "fetched"]


def _bytes(n):
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def _rate(now, before, key, seconds):
    if before is None or seconds <= 0:
        return 0.0
    return max(0.0, (now.get(key, 0) - before.get(key, 0)) / seconds)


class View:
    """Two readings of Dispatcher.monitor turned into rows; `render` makes the rich screen."""

    def __init__(self):
        self.now = self.before = None
        self.seconds = 0.0
        self.mode = "workers"
        self.sort = {"workers": 0, "clients": 0}

    def update(self, reading, at):
        if self.now is not None:
            self.before, self.seconds = self.now, at - self.now[1]
        self.now = (reading, at)

    # ---------------------------------------------------------------- rows

    def _previous(self, kind, key, value):
        if self.before is None:
            return None
        for item in self.before[0][kind]:
            if item[key] == value:
                return item
        return None

    def dispatcher_row(self):
        d = self.now[0]["dispatcher"]
        old = self.before[0]["dispatcher"] if self.before else None
        hits, misses = d.get("dispatcher_plan_cache_hits", 0), d.get("dispatcher_plan_cache_misses", 0)
        n = d.get("dispatcher_instructions", 0)
        return {
            "workers": int(d.get("workers", 0)),
            "sessions": int(d.get("dispatcher_sessions", 0)),
            "instructions/s": _rate(d, old, "dispatcher_instructions", self.seconds),
            "plan cache hit rate": hits / (hits + misses) if hits + misses else None,
            "us/instruction": 1000 * d.get("dispatcher_dispatch_ms", 0) / n if n else None,
            "connections": int(d.get("dispatcher_connections", 0)),
        }

    def worker_rows(self):
        rows = []
        for w in self.now[0]["workers"]:
            s = w["stats"]
            old = self._previous("workers", "index", w["index"])
            olds = old["stats"] if old and old["answered"] else None
            ran = lambda x: x.get("eager_ops", 0) + x.get("region_replays", 0)  # noqa: E731
            kernels = (ran(s) - ran(olds)) / self.seconds if olds and self.seconds > 0 else 0.0
            util = _rate(s, olds, "scheduler_busy_ms", self.seconds) / 1000
            state = "up" if w["alive"] and w["answered"] else ("no answer" if w["alive"] else "lost")
            rows.append({
                "index": w["index"], "device": w["device"], "state": state,
                "util": min(util, 1.0), "queue": int(s.get("scheduler_queued", 0)), "kernels/s": kernels,
                "fused": int(s.get("fused_ops", 0)), "eager": int(s.get("eager_ops", 0)),
                "compiled": int(s.get("kernels_compiled", 0)),
                "compiling": int(s.get("regions_compiling", 0)),
                "cache hits": int(s.get("cache_hits", 0)),
                "live": s.get("live_bytes", 0), "peak": s.get("peak_bytes", 0),
                "sent": s.get("collective_bytes", 0) + s.get("p2p_bytes_sent", 0),
                "received": s.get("p2p_bytes_received", 0),
            })
        return rows

    def client_rows(self):
        busy_now, busy_before = {}, {}
        for w in self.now[0]["workers"]:
            for sid, (ms, _) in w["sessions"].items():
                busy_now[sid] = busy_now.get(sid, 0) + ms
        if self.before:
            for w in self.before[0]["workers"]:
                for sid, (ms, _) in w["sessions"].items():
                    busy_before[sid] = busy_before.get(sid, 0) + ms
        used = {sid: busy_now[sid] - busy_before.get(sid, 0) for sid in busy_now}
        total = sum(used.values())
        rows = []
        for s in self.now[0]["sessions"]:
            old = self._previous("sessions", "id", s["id"])
            ops = (s["instructions"] - old["instructions"]) / self.seconds if old and self.seconds > 0 else 0.0
            name = s["label"] + (f" ({s['name']})" if s["name"] else "")
            held = sum(w["sessions"].get(s["id"], (0, 0))[1] for w in self.now[0]["workers"])
            rows.append({
                "id": s["id"], "name": name, "ops/s": ops,
                "share": used.get(s["id"], 0) / total if total > 0 else 0.0,
                "uploaded": s["upload_bytes"], "fetched": s["fetch_bytes"], "held": held,
                "errors": s["errors"], "last error": s["last_error"].splitlines()[0][:80] if s["last_error"] else "",
            })
        return rows

    # ---------------------------------------------------------------- screen

    def sort_key(self):
        columns = WORKER_SORTS if self.mode == "workers" else CLIENT_SORTS
        return columns[self.sort[self.mode] % len(columns)]

    def next_sort(self):
        self.sort[self.mode] += 1

    def render(self, where):
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        d = self.dispatcher_row()
        hit = "-" if d["plan cache hit rate"] is None else f"{d['plan cache hit rate']:.0%}"
        cost = "-" if d["us/instruction"] is None else f"{d['us/instruction']:.1f} us"
        header = Text.assemble(
            ("gt top ", "bold"), f"{where}   ",
            f"{d['workers']} workers  {d['sessions']} sessions  {d['connections']} connections   ",
            f"{d['instructions/s']:,.0f} instructions/s  plan cache hits {hit}  dispatch {cost}/instruction")
        key = self.sort_key()
        if self.mode == "workers":
            rows = sorted(self.worker_rows(), key=lambda r: r[key], reverse=key != "index")
            table = Table(title=f"workers (sorted by {key})", expand=True)
            for column in ("worker", "device", "state", "util", "queue", "kernels/s", "fused", "eager", "compiled",
                           "compiling", "cache hits", "live", "peak", "sent", "received"):
                table.add_column(column, justify="left" if column in ("device", "state") else "right")
            for r in rows:
                table.add_row(str(r["index"]), r["device"], r["state"], f"{r['util']:.0%}", str(r["queue"]),
                              f"{r['kernels/s']:,.0f}", f"{r['fused']:,}", f"{r['eager']:,}", f"{r['compiled']:,}",
                              str(r["compiling"]), f"{r['cache hits']:,}", _bytes(r["live"]), _bytes(r["peak"]), _bytes(r["sent"]),
                              _bytes(r["received"]))
        else:
            rows = sorted(self.client_rows(), key=lambda r: r[key], reverse=key != "id")
            table = Table(title=f"clients (sorted by {key})", expand=True)
            for column in ("session", "client", "ops/s", "share", "uploaded", "fetched", "held", "errors", "last error"):
                table.add_column(column, justify="left" if column in ("client", "last error") else "right")
            for r in rows:
                table.add_row(str(r["id"]), r["name"], f"{r['ops/s']:,.0f}", f"{r['share']:.0%}", _bytes(r["uploaded"]),
                              _bytes(r["fetched"]), _bytes(r["held"]), str(r["errors"]), r["last error"])
        keys = Text("q quit   w workers   c clients   s sort", style="dim")
        return Group(header, table, keys)


def _address(text):
    text = text or os.environ.get("GT_SERVER", "")
    if not text:
        sys.exit("gt top: which dispatcher? give host:port (or set GT_SERVER)")
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        sys.exit(f"gt top: '{text}' is not host:port")
    return host, int(port)


class _Keys:
    """Single key presses from a terminal (cbreak mode), restored on exit."""

    def __init__(self):
        self.tty = sys.stdin.isatty()
        self.saved = None

    def __enter__(self):
        if self.tty:
            import termios
            import tty
            self.saved = termios.tcgetattr(sys.stdin)
            tty.setcbreak(sys.stdin.fileno())
        return self

    def __exit__(self, *exc):
        if self.saved is not None:
            import termios
            termios.tcsetattr(sys.stdin, termios.TCSADRAIN, self.saved)

    def read(self, seconds):
        """The keys pressed within `seconds` (returns early on a key)."""
        if not self.tty:
            time.sleep(seconds)
            return ""
        ready, _, _ = select.select([sys.stdin], [], [], seconds)
        return os.read(sys.stdin.fileno(), 32).decode(errors="ignore") if ready else ""


def main(argv=None):
    p = argparse.ArgumentParser(prog="gt top", description="A live view of a GT dispatcher, its workers and sessions.")
    p.add_argument("address", nargs="?", help="host:port of the dispatcher (default $GT_SERVER)")
    p.add_argument("--token", default=os.environ.get("GT_TOKEN", ""), help="a client token (default $GT_TOKEN)")
    p.add_argument("--tls-ca", default=os.environ.get("GT_TLS_CA", ""), help="certificates to trust (default $GT_TLS_CA)")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between readings (default 1)")
    p.add_argument("--once", action="store_true", help="print one screen (two readings, --interval apart) and exit")
    p.add_argument("--clients", action="store_true", help="start on the clients view")
    args = p.parse_args(argv)
    host, port = _address(args.address)
    try:
        from rich.console import Console
        from rich.live import Live
    except ImportError:
        sys.exit("gt top needs rich: pip install rich (or: pip install 'gt[top]')")
    from . import _C

    where = f"{host}:{port}"
    try:
        monitor = _C.Monitor(host, port, args.token, 10.0, args.tls_ca)
        view = View()
        view.mode = "clients" if args.clients else "workers"
        view.update(monitor.poll(), time.monotonic())
        if args.once:
            time.sleep(args.interval)
            view.update(monitor.poll(), time.monotonic())
            Console().print(view.render(where))
            return
        with _Keys() as keys, Live(view.render(where), auto_refresh=False, screen=sys.stdout.isatty()) as live:
            while True:
                deadline = time.monotonic() + args.interval
                while (left := deadline - time.monotonic()) > 0:
                    pressed = keys.read(left)
                    if "q" in pressed:
                        return
                    for k in pressed:
                        if k == "w":
                            view.mode = "workers"
                        elif k == "c":
                            view.mode = "clients"
                        elif k == "s":
                            view.next_sort()
                    if pressed:
                        live.update(view.render(where), refresh=True)
                view.update(monitor.poll(), time.monotonic())
                live.update(view.render(where), refresh=True)
    except ConnectionError as e:
        sys.exit(f"gt top: {e}")
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
