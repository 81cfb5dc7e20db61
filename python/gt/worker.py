"""`python -m gt.worker --host HOST -p PORT`: runs gt-worker (same flags)."""
import sys

from ._runtime import run_daemon

if __name__ == "__main__":
    run_daemon("gt-worker", sys.argv[1:])
