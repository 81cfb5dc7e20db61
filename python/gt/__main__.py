"""The `gt` command (also `python -m gt`):

    gt trace summary out.json [--top 10]   where a gt.profiler trace's time went
"""
import argparse


def main(argv=None):
    p = argparse.ArgumentParser(prog="gt", description="GT's command-line tools.")
    commands = p.add_subparsers(dest="command", required=True)
    trace = commands.add_parser("trace", help="read a trace written by gt.profiler (GT_TRACE=out.json)")
    trace_commands = trace.add_subparsers(dest="trace_command", required=True)
    summary = trace_commands.add_parser("summary", help="time per op kind and the slowest syncs")
    summary.add_argument("path")
    summary.add_argument("--top", type=int, default=10, help="rows per table (default 10)")
    args = p.parse_args(argv)
    from . import profiler
    print(profiler.summary(args.path, args.top))


if __name__ == "__main__":
    main()
