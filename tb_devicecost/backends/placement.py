"""Where the work ran: device names, batches, the ops of the first step,
copies.

The op placement of a `tf.function` is only observable while it is first
instantiated: `capture_step_placement` switches on the eager context's run
metadata and graph collection around that first call and reads the
partition graphs, whose nodes carry their device and whose `_Send`/`_Recv`
pairs are the edges where data crosses from one device to another.
"""

import collections
import re

import numpy as np

# Ops that move data or mark function boundaries rather than compute; left
# out of "op types on the CPU" so that list names real work.
_BOOKKEEPING_OPS = frozenset(
    {
        "_Arg",
        "_Retval",
        "_Send",
        "_Recv",
        "_HostSend",
        "_HostRecv",
        "NoOp",
        "Const",
        "Identity",
        "IdentityN",
        "_DeviceArg",
        "_DeviceRetval",
        "ReadVariableOp",
        "AssignVariableOp",
        "VarHandleOp",
    }
)
_SEND_OPS = ("_Send", "_HostSend")
# Op types listed per run; enough to name the culprits.
_MAX_OP_TYPES = 50


def short_device_name(device):
    """`/job:localhost/replica:0/task:0/device:GPU:0` -> `GPU:0`."""
    if not device:
        return "unplaced"
    match = re.search(r"(?:device:)?([A-Za-z_]+:\d+)\s*$", device)
    return match.group(1).upper() if match else device


def leaves(batch):
    """The tensors or arrays of a batch (or of a step's logs); per-replica
    values expanded."""
    stack = [batch]
    while stack:
        element = stack.pop()
        if isinstance(element, dict):
            stack.extend(element.values())
        elif isinstance(element, (tuple, list)):
            stack.extend(element)
        elif _is_per_replica(element):
            stack.extend(element.values)
        elif element is not None and hasattr(element, "shape") and hasattr(element, "dtype"):
            yield element


def _is_per_replica(element):
    # `tf.distribute`'s PerReplica: a tuple of one value per replica.
    values = getattr(element, "values", None)
    return isinstance(values, tuple) and hasattr(element, "_type_spec")


def _first_leaf(batch):
    element = batch
    while isinstance(element, (tuple, list)) and element:
        element = element[0]
    if isinstance(element, dict) and element:
        element = next(iter(element.values()))
    return element


# The batches whose first element is a step's inputs (`(x, y)`, or a
# DataLoader's `[x, y]`): the steps read its leading size inline, where an
# array alone would give the size of its first sample.
BATCH_SEQUENCES = (tuple, list)


def batch_size(batch):
    """Samples in a batch (its leading dimension), per-replica parts summed.

    Returns `None` when unknown.
    """
    if isinstance(batch, tuple) and batch:
        # The common case, once per step: `(x, y)` of arrays.
        shape = getattr(batch[0], "shape", None)
        if isinstance(shape, tuple) and shape:
            # A NumPy, JAX or PyTorch array (never a PerReplica).
            return int(shape[0])
        if shape is not None and not _is_per_replica(batch[0]):
            try:
                return None if shape[0] is None else int(shape[0])
            except (IndexError, TypeError):
                return None
    element = _first_leaf(batch)
    parts = element.values if _is_per_replica(element) else (element,)
    total = 0
    try:
        for part in parts:
            dimension = part.shape[0]
            if dimension is None:
                return None
            total += int(dimension)
    except Exception:  # pylint: disable=broad-except
        return None
    return total


def input_bytes(batch):
    """Bytes in one batch of tensors or arrays: what crosses to the device.

    Strings count their bytes. Returns `None` when a part's size cannot be
    known (an unknown dimension, an unsupported type).
    """
    total = 0
    for element in leaves(batch):
        if hasattr(element, "element_size") and hasattr(element, "numel"):
            total += int(element.element_size()) * int(element.numel())  # torch
            continue
        dtype = getattr(element.dtype, "as_numpy_dtype", element.dtype)
        try:
            dtype = np.dtype(dtype)
        except TypeError:
            return None
        if dtype.kind in "OSU":
            try:
                values = np.asarray(element.numpy() if hasattr(element, "numpy") else element)
                total += sum(
                    len(value) if isinstance(value, (bytes, str)) else 0
                    for value in values.ravel()
                )
            except Exception:  # pylint: disable=broad-except
                return None
            continue
        count = 1
        for dimension in element.shape:
            if dimension is None:
                return None
            count *= int(dimension)
        total += count * dtype.itemsize
    return total


def summarize_partition_graphs(graphs):
    """Op counts per device, CPU op types and cross-device copies.

    Args:
        graphs: `GraphDef`s of the partitions of the step's function(s).
    """
    ops = collections.Counter()
    cpu_op_types = collections.Counter()
    copies = 0
    for graph in graphs:
        for node in graph.node:
            device = short_device_name(node.device)
            ops[device] += 1
            if node.op in _SEND_OPS:
                send = node.attr["send_device"].s.decode(errors="replace")
                receive = node.attr["recv_device"].s.decode(errors="replace")
                if short_device_name(send) != short_device_name(receive):
                    copies += 1
            elif device.startswith("CPU") and node.op not in _BOOKKEEPING_OPS:
                cpu_op_types[node.op] += 1
    return {
        "ops": dict(sorted(ops.items())),
        "cpu_op_types": [name for name, _ in cpu_op_types.most_common(_MAX_OP_TYPES)],
        "cross_device_copies": copies,
    }


def capture_step_placement(call):
    """Runs `call()` with TensorFlow's run metadata on; returns (result, digest).

    `call()` runs exactly once, and only its own exceptions propagate. The
    digest is `None` when the call instantiated no function (eager runs, or
    a function that was already instantiated), and `{"error": ...}` when the
    capture itself failed.
    """
    from tensorflow.python.eager import context  # TF backend only.

    eager_context = context.context()
    try:
        # Drop whatever an earlier capture or another tool left collected,
        # so the digest holds this call's graphs and nothing else.
        eager_context.export_run_metadata()
        eager_context.enable_run_metadata()
        eager_context.enable_graph_collection()
    except Exception as error:  # pylint: disable=broad-except
        return call(), {"error": f"{type(error).__name__}: {error}"}
    run_metadata = None
    try:
        result = call()
    finally:
        try:
            run_metadata = eager_context.export_run_metadata()
        finally:
            eager_context.disable_graph_collection()
            eager_context.disable_run_metadata()
    graphs = _step_partition_graphs(run_metadata)
    if not graphs:
        return result, None
    return result, summarize_partition_graphs(graphs)


def _step_partition_graphs(run_metadata):
    """The partition graphs of the step's own function.

    While collection is on, every function instantiated is reported: the
    step, but also the one-op functions of eager work that happens in the
    same call (creating optimizer variables, reading an `Optional`). The
    step is the function that calls others (its library is not empty), or
    else the largest one. The top-level `partition_graphs` repeat the
    functions' partitions, so they are not added again.
    """
    functions = list(getattr(run_metadata, "function_graphs", []))
    if not functions:
        return list(getattr(run_metadata, "partition_graphs", []))
    calling = [
        function
        for function in functions
        if function.pre_optimization_graph.library.function
    ]
    if not calling:
        calling = [
            max(
                functions,
                key=lambda function: sum(
                    len(graph.node) for graph in function.partition_graphs
                ),
            )
        ]
    return [graph for function in calling for graph in function.partition_graphs]
