"""gt.distributed: what scripts written for torch.distributed call when they run as one process.

GT does not run one process per GPU: one client drives every worker of its session, and a
sharding config (gt.signal, docs/sharding.md) says how tensors and compute spread over them.
So a script is always rank 0 of a world of 1 here. `init_process_group(world_size=1)` starts that
world, after which the collectives hand each tensor back as it is (one rank's all_reduce); asked
for more processes it raises, naming the GT way."""

_INITIALIZED = False


def is_available():
    """False: torch.distributed's process groups (one process per device) are not GT's way, and
    libraries that see True go on to import DTensor and device meshes, which GT has not (this
    module answers a single-process script's calls: rank 0 of 1)."""
    return False


def is_initialized():
    return _INITIALIZED


_BACKEND = [None]  # the backend a world of one process was started with


def init_process_group(backend=None, init_method=None, world_size=-1, rank=-1, **kwargs):
    """A world of one process (world_size 1, or WORLD_SIZE=1 from a launcher), as PyTorch's: the
    collectives then hand each tensor back as it is (all_reduce of one rank), so code that calls
    them unconditionally runs (dinov2's Sinkhorn-Knopp). Any larger world raises RuntimeError:
    GT spreads one process's work over its workers instead (see the module's docstring)."""
    import os
    global _INITIALIZED
    world = world_size if world_size != -1 else int(os.environ.get("WORLD_SIZE", "-1"))
    me = rank if rank != -1 else int(os.environ.get("RANK", "0"))
    if world != 1 or me != 0:
        raise RuntimeError("gt.distributed.init_process_group: GT runs one client process for all workers; "
                           "spread work over them with a sharding config (gt.load_config, docs/sharding.md) instead "
                           "of one process per device (torchrun); a world of one process (world_size=1) is "
                           "supported")
    if _INITIALIZED:
        raise ValueError("trying to initialize the default process group twice!")
    _INITIALIZED, _BACKEND[0] = True, str(backend or "gloo")


def destroy_process_group(group=None):
    global _INITIALIZED
    _INITIALIZED = False


def get_rank(group=None):
    return 0


def get_world_size(group=None):
    return 1


def barrier(group=None, **kwargs):
    """Nothing to wait for in a world of one process."""


class ReduceOp:
    """torch.distributed.ReduceOp's names (for scripts that pass them)."""
    SUM, PRODUCT, MIN, MAX, BAND, BOR, BXOR, AVG, PREMUL_SUM = ("sum", "product", "min", "max", "band", "bor",
                                                                "bxor", "avg", "premul_sum")


class _Group:
    WORLD = None


group = GroupMember = _Group


class _Work:
    """What an async_op collective returns: done already (one process)."""

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True


def _copy(dst, src):
    dst.copy_(src.reshape(dst.shape) if src.numel() == dst.numel() else src)


def _one_rank(name, args, kwargs):
    """The collective `name` in a world of one process: each rank's part is this process's own."""
    def arg(i, key, default=None):
        return args[i] if len(args) > i else kwargs.get(key, default)
    if name in ("send", "recv", "isend", "irecv"):
        raise RuntimeError(f"gt.distributed.{name}: a world of one process has no other rank to talk to")
    if name == "get_backend":
        return _BACKEND[0]
    if name == "new_group":
        return _Group()
    if name in ("all_gather", "all_to_all"):  # (output list, input): this rank's slot is its own input
        out, inp = arg(0, "tensor_list" if name == "all_gather" else "output_tensor_list"), \
            arg(1, "tensor" if name == "all_gather" else "input_tensor_list")
        _copy(out[0], inp if name == "all_gather" else inp[0])
    elif name in ("all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single"):
        _copy(arg(0, "output_tensor" if name != "all_to_all_single" else "output"),
              arg(1, "input_tensor" if name != "all_to_all_single" else "input"))
    elif name == "reduce_scatter":
        _copy(arg(0, "output"), arg(1, "input_list")[0])
    elif name == "gather":
        gather_list = arg(1, "gather_list")
        if gather_list:
            _copy(gather_list[0], arg(0, "tensor"))
    elif name == "scatter":
        scatter_list = arg(1, "scatter_list")
        if scatter_list:
            _copy(arg(0, "tensor"), scatter_list[0])
    elif name == "all_gather_object":
        arg(0, "object_list")[0] = arg(1, "obj")
    # all_reduce, reduce, broadcast, broadcast_object_list: the one rank's values are the result
    return _Work() if kwargs.get("async_op") else None


def _no_process_group(name):
    def collective(*args, **kwargs):
        """Before init_process_group: raises ValueError, as PyTorch's collectives do (check
        is_initialized() first, as libraries do). After it (a world of one process): this
        process's values are every rank's (all_reduce leaves a tensor as it is)."""
        if _INITIALIZED:
            return _one_rank(name, args, kwargs)
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    collective.__name__ = collective.__qualname__ = name
    return collective


_COLLECTIVES = ("all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "broadcast",
                "broadcast_object_list", "reduce", "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter",
                "all_to_all", "all_to_all_single", "send", "recv", "isend", "irecv", "get_backend", "new_group")
for _name in _COLLECTIVES:
    globals()[_name] = _no_process_group(_name)

__all__ = ["is_available", "is_initialized", "init_process_group", "destroy_process_group", "get_rank",
           "get_world_size", "barrier", "ReduceOp", "group", "GroupMember", *_COLLECTIVES]


# torch.distributed.tensor: DTensor exists for the isinstance checks libraries make
# (accelerate's model_has_dtensor); GT's sharded tensors are ordinary Tensors (docs/sharding.md),
# so no tensor is a DTensor.
import sys as _sys  # noqa: E402
import types as _types  # noqa: E402

__path__ = []  # (a package, so that `import torch.distributed.tensor` finds the module below)
tensor = _types.ModuleType(f"{__name__}.tensor", "torch.distributed.tensor: DTensor (no GT tensor is one).")


class DTensor:
    """torch.distributed.tensor.DTensor: no GT tensor is one (GT shards by config)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("DTensor: GT shards tensors by its sharding config (docs/sharding.md), not as DTensors")


tensor.DTensor = DTensor
_sys.modules[tensor.__name__] = tensor


class ProcessGroup:
    """torch.distributed.ProcessGroup: exists for annotations; GT's one process has no groups."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("ProcessGroup: GT's torch.distributed is a one-process facade (docs/sharding.md)")


device_mesh = _types.ModuleType(f"{__name__}.device_mesh", "torch.distributed.device_mesh: DeviceMesh (none in GT).")


class DeviceMesh:
    """torch.distributed.device_mesh.DeviceMesh: exists for annotations; GT lays tensors out on
    its workers by its sharding config (docs/sharding.md), so making one raises."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("DeviceMesh: GT shards by its sharding config (docs/sharding.md)")


def init_device_mesh(*args, **kwargs):
    raise NotImplementedError("init_device_mesh: GT shards by its sharding config (docs/sharding.md)")


device_mesh.DeviceMesh, device_mesh.init_device_mesh = DeviceMesh, init_device_mesh
_sys.modules[device_mesh.__name__] = device_mesh

# torch.distributed.nn (vector-quantize-pytorch imports it): its functional collectives, which
# need a process group as the ones above do
nn = _types.ModuleType(f"{__name__}.nn", "torch.distributed.nn: collectives with gradients (none: one process).")
nn.__path__ = []
nn.functional = _types.ModuleType(f"{__name__}.nn.functional", "torch.distributed.nn.functional (one process).")
for _name in ("all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter", "gather", "scatter", "all_to_all"):
    setattr(nn.functional, _name, globals()[_name])
_sys.modules[nn.__name__], _sys.modules[nn.functional.__name__] = nn, nn.functional
