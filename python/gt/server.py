"""`python -m gt.server -p PORT`: runs gt-dispatcher (same flags)."""
import sys

from ._runtime import run_daemon

if __name__ == "__main__":
    run_daemon("gt-dispatcher", sys.argv[1:])
