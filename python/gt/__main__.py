"""The `gt` command (also `python -m gt`):

    gt trace summary out.json [--top 10]          where a gt.profiler trace's time went
    gt trace plot out.json -o timeline.png        a timeline picture of it (matplotlib)
    gt top [host:port]                            a live view of a dispatcher (gt/top.py)
"""
import argparse


def main(argv=None):
    import sys
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["top"]:  # its own options (gt/top.py)
        from . import top
        return top.main(argv[1:])
    p = argparse.ArgumentParser(prog="gt", description="GT's command-line tools.")
    commands = p.add_subparsers(dest="command", required=True)
    commands.add_parser("top", help="a live view of a dispatcher, its workers and sessions (gt top --help)")
    trace = commands.add_parser("trace", help="read a trace written by gt.profiler (GT_TRACE=out.json)")
    trace_commands = trace.add_subparsers(dest="trace_command", required=True)
    summary = trace_commands.add_parser("summary", help="time per op kind and the slowest syncs")
    summary.add_argument("path")
    summary.add_argument("--top", type=int, default=10, help="rows per table (default 10)")
    plot = trace_commands.add_parser("plot", help="draw a timeline picture (PNG, SVG or PDF) with matplotlib")
    plot.add_argument("path")
    plot.add_argument("-o", "--output", default="timeline.png", help="the picture (default timeline.png)")
    args = p.parse_args(argv)
    from . import profiler
    if args.trace_command == "summary":
        print(profiler.summary(args.path, args.top))
    else:
        n = profiler.plot(args.path, args.output)
        print(f"{args.output}: {n} slices")


if __name__ == "__main__":
    main()
