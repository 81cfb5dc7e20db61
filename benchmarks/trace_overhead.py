"""What gt.profiler's trace costs a training step: the MLP step of vs_torch.py with no trace, with
the client's track only, and with the whole trace (client, dispatcher and workers), interleaved in
one process so that the machine's drift hits all three alike. Prints one table; the issue's
target is at most 5 % for the whole trace.

    python benchmarks/trace_overhead.py [--rounds 8] [--steps 30]
"""
import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("GT_JIT_SYNC", "1")  # compiles before the first replay: steady steps from the start
import gt  # noqa: E402
from gt import profiler, _tensor  # noqa: E402
from vs_torch import mlp_step, timed  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--steps", type=int, default=30, help="timed steps per mode per round")
    args = p.parse_args()
    step = mlp_step(gt)
    timed(step, 20, 1)
    path = os.path.join(tempfile.mkdtemp(), "trace.json")
    seconds = {"no trace": [], "client track only": [], "whole trace": []}
    for _ in range(args.rounds):
        seconds["no trace"].append(timed(step, 2, args.steps))
        _tensor._trace = profiler._Recorder()  # what gt.profiler.trace records on the client, nothing more
        try:
            seconds["client track only"].append(timed(step, 2, args.steps))
        finally:
            _tensor._trace = None
        with profiler.trace(path):
            seconds["whole trace"].append(timed(step, 2, args.steps))
    base = statistics.median(seconds["no trace"])
    print(f"| MLP step ({args.rounds} rounds of {args.steps} steps) | median ms | min ms | max ms | cost (medians) |")
    print("|---|---|---|---|---|")
    for mode, values in seconds.items():
        m = statistics.median(values)
        print(f"| {mode} | {1000 * m:.3f} | {1000 * min(values):.3f} | {1000 * max(values):.3f} | "
              f"{'' if mode == 'no trace' else f'{100 * (m / base - 1):+.1f} %'} |")


if __name__ == "__main__":
    main()
