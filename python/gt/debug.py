"""Introspection: what the dispatcher and workers have done for this process's session.

    import gt
    ...train a few steps...
    s = gt.debug.stats()
    print(s["fused_ops"], s["eager_ops"], s["regions_compiled"], s["compile_ms"])
"""


def stats():
    """Counters of the dispatcher and every worker (worker counters summed), as a dict.

    Waits until everything issued so far has run, so the counters include it. Keys:

    - ``workers``: live workers; ``batches``: batches the dispatcher received (all sessions).
    - ``regions_formed`` / ``regions_marked_hot``: gt.region occurrences the dispatcher built
      and how many of them were hot (a region is hot once its structure has been seen
      ``GT_HOT_AFTER`` times, default 2).
    - ``regions_seen`` / ``regions_hot``: region occurrences the workers received / hot ones.
    - ``regions_compiled``: distinct hot regions whose fused kernel is ready;
      ``region_replays``: hot occurrences that ran as their fused kernel;
      ``region_fallbacks``: hot regions that failed to compile and stay eager (see ``notes``);
      ``region_verify_failures``: with ``GT_JIT_VERIFY=1``, fused outputs that differed from
      op-by-op execution (always 0 unless there is a compiler bug).
    - CUDA workers: ``cuda_graph_captures`` / ``cuda_graph_replays``: hot regions captured as a
      CUDA graph, and replays that ran as one graph launch (a replay reading and writing the
      same buffers as an earlier one; with ``GT_CUDA_GRAPHS=1`` in the worker's environment);
      ``region_kernel_launches``: GPU kernels the region replays launched;
      ``gpu_kernel_launches`` (graph launches counted by their kernels), ``gpu_graph_launches``.
    - ``fused_ops`` / ``eager_ops``: ops run inside fused kernels / one kernel per op.
    - ``types_inferred``: result types a worker inferred instead of taking the one the client
      inferred and the program carries (ops that run without a kernel, such as uploads,
      reshapes, matmuls and collectives, check theirs; see docs/architecture.md).
    - ``kernels_compiled`` (= ``cache_misses``), ``kernel_disk_hits``, ``cache_hits``
      (disk + memory), ``compile_ms`` (milliseconds spent compiling, all kernels),
      ``disk_load_ms`` (milliseconds spent loading kernels from the disk cache).
    - ``region_compile_ms`` / ``region_load_ms`` / ``region_disk_hits``: the same for fused
      region kernels only.
    - ``instructions``, ``live_tensors``, ``live_bytes``, ``peak_bytes`` (worker memory).
    - CPU workers: ``blas_threads`` (threads of each GEMM) and ``kernel_threads`` (threads of a
      large fused kernel's loops, and of a batch of small GEMMs), both ``gt-worker --threads``
      or one per core; ``matmuls_threaded_by_batch``: batched matmuls of small matrices
      (m*n*k <= 262144, which OpenBLAS runs on one thread) whose batch elements ran on the
      kernel threads, a whole GEMM per thread; ``matmuls_jit_gemm``: such batches whose GEMMs
      ran on MKL's JIT kernels (machine code made for one shape; 0 without MKL).
    - ``notes``: list of strings, one per region that fell back to eager, saying why.
    - ``collective_ops`` (all_reduce, all_gather, reduce_scatter, all_to_all), ``p2p_ops``
      (send, recv), ``collective_bytes`` (bytes a worker put into collectives),
      ``p2p_bytes_sent`` / ``p2p_bytes_received``, ``comm_groups`` (worker groups connected);
      CUDA workers with NCCL and Gloo also ``groups_on_gloo`` (groups whose members share a GPU).
    - ``direct_reads`` / ``direct_read_bytes``: fetches clients made straight from a worker
      (``gt-worker --listen``; the auto-started runtime's workers) and the tensor bytes they
      moved; ``direct_read_misses``: those the worker did not hold whole (a sharded tensor, one
      the dispatcher refused), which the client then made through the dispatcher.
    - ``scheduler_fetches_mid_program``: fetches a worker answered as soon as their tensor was
      made, before the rest of its program ran (``loss.item()`` after ``optimizer.step()``);
      ``scheduler_client_core_units``: units a CPU worker ran on one thread fewer, leaving a
      core to the client issuing its next step (``gt-worker --client-core``, auto-started workers).
    - ``dispatcher_upload_bytes`` / ``dispatcher_fetch_bytes``: tensor bytes that passed
      through the dispatcher (client uploads and fetches; collectives never do);
      ``dispatcher_instructions`` and ``dispatcher_dispatch_ms``: instructions received and the
      milliseconds spent turning them into worker programs.
    - ``by_worker``: ``{worker index: {counter: value}}``, each live worker's own counters.

    Counters are cumulative since the daemons started and cover every session they served.
    Raises ConnectionError if the dispatcher is gone.
    """
    from ._runtime import client
    return client().stats()


def get_tape():
    """The instructions this process recorded (the last 10000), oldest first: a list of dicts
    with keys op, id (the result's tensor id; 0 for free), inputs (tensor ids), shape, dtype,
    location (your "file.py:line"), time (seconds since the session opened) and text."""
    from ._runtime import client
    return client().tape()


def print_tape(last=None, file=None):
    """Prints the tape, one instruction per line ("TENSOR[3] := add TENSOR[1] TENSOR[2] :
    float32[2, 3]  # train.py:12"); `last` limits it to the newest entries."""
    entries = get_tape()
    if last is not None:
        entries = entries[-last:]
    for e in entries:
        print(e["text"], file=file)
