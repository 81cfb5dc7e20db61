"""gt.multiprocessing: Python's multiprocessing, as torch.multiprocessing is, plus `spawn`.

    import gt.multiprocessing as mp
    mp.spawn(main_worker, args=(config,), nprocs=2)   # main_worker(i, config) in 2 processes

Every name of Python's `multiprocessing` is here (`Process`, `Queue`, `Pool`, `get_context`,
`set_start_method`, ...). A child process is a GT client of its own: it opens its own session
at its first op, and a tensor passed to it (an argument, a queue item) is pickled by its values
and arrives as a new tensor of the child's session. So processes share no tensor memory: a
tensor's `share_memory_()` and a module's `share_memory()` warn and change nothing, and
PyTorch's Hogwild pattern (workers updating one shared model in place) trains a separate copy
in each process here. Under `python -m gt.as_torch`, spawned children see `torch` as GT too.
"""
import multiprocessing as _mp
from multiprocessing import *  # noqa: F401,F403  (torch.multiprocessing re-exports them too)

__all__ = list(_mp.__all__) + ["spawn", "start_processes", "ProcessRaisedException", "ProcessExitedException"]


class ProcessRaisedException(Exception):
    """A process started by spawn raised: its traceback is in the message."""

    def __init__(self, msg, error_index, error_pid):
        super().__init__(msg)
        self.error_index, self.pid = error_index, error_pid


class ProcessExitedException(Exception):
    """A process started by spawn exited with a non-zero code (or a signal) without raising."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg)
        self.error_index, self.pid, self.exit_code, self.signal_name = error_index, error_pid, exit_code, signal_name


def _run(fn, i, args, errors):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        import traceback
        errors.put((i, traceback.format_exc()))
        raise SystemExit(1)


class ProcessContext:
    """The processes spawn started; join() waits for them (see spawn)."""

    def __init__(self, processes, errors):
        self.processes, self._errors = processes, errors

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        """Waits for every process (at most `timeout` seconds each; None: no bound). Returns True
        when all have exited. Raises ProcessRaisedException with the first failure's traceback, or
        ProcessExitedException for a process that died without one; the others are terminated."""
        for p in self.processes:
            p.join(timeout)
        failed = [(i, p) for i, p in enumerate(self.processes) if p.exitcode not in (None, 0)]
        if failed:
            for p in self.processes:
                if p.is_alive():
                    p.terminate()
            if not self._errors.empty():
                index, text = self._errors.get()
                raise ProcessRaisedException(f"\n\n-- Process {index} terminated with the following error:\n{text}",
                                             index, self.processes[index].pid)
            index, p = failed[0]
            raise ProcessExitedException(f"process {index} terminated with exit code {p.exitcode}", index, p.pid,
                                         p.exitcode)
        return all(p.exitcode is not None for p in self.processes)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Runs fn(i, *args) for i in range(nprocs), each in a new process started with
    `start_method`. join=True: waits for all (see ProcessContext.join) and returns None; else
    returns the ProcessContext."""
    ctx = _mp.get_context(start_method)
    errors = ctx.SimpleQueue()
    processes = []
    for i in range(nprocs):
        p = ctx.Process(target=_run, args=(fn, i, args, errors), daemon=daemon)
        p.start()
        processes.append(p)
    context = ProcessContext(processes, errors)
    if not join:
        return context
    context.join()
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """torch.multiprocessing.spawn: start_processes with the 'spawn' start method."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
