"""Where the work ran: devices, variables, the ops of the first step, copies.

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


def is_accelerator(device_name):
    return not short_device_name(device_name).startswith("CPU")


def list_devices(tf):
    """Physical and logical devices, with the model name where known."""
    physical = []
    for device in tf.config.list_physical_devices():
        entry = {"name": short_device_name(device.name), "kind": device.device_type}
        if device.device_type != "CPU":
            try:
                details = tf.config.experimental.get_device_details(device)
                entry["model"] = details.get("device_name")
                if "compute_capability" in details:
                    entry["compute_capability"] = list(details["compute_capability"])
            except Exception:  # pylint: disable=broad-except
                pass
        physical.append(entry)
    logical = [
        {"name": short_device_name(device.name), "kind": device.device_type}
        for device in tf.config.list_logical_devices()
    ]
    return {"physical": physical, "logical": logical}


def variable_devices(variables):
    """Counts variables per device (Keras variables or backend tensors)."""
    counts = collections.Counter()
    for variable in variables:
        value = getattr(variable, "value", variable)
        device = getattr(value, "device", None)
        counts[short_device_name(device if isinstance(device, str) else str(device))] += 1
    return dict(sorted(counts.items()))


def input_bytes(batch):
    """Bytes in one batch of tensors or arrays: what crosses to the device."""
    total = 0
    stack = [batch]
    while stack:
        element = stack.pop()
        if isinstance(element, dict):
            stack.extend(element.values())
        elif isinstance(element, (tuple, list)):
            stack.extend(element)
        elif element is not None and hasattr(element, "shape") and hasattr(element, "dtype"):
            dtype = getattr(element.dtype, "as_numpy_dtype", element.dtype)
            try:
                itemsize = np.dtype(dtype).itemsize
            except TypeError:
                itemsize = 0
            count = 1
            for dimension in element.shape:
                count *= int(dimension or 0)
            total += count * itemsize
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

    `digest` is `None` when the call instantiated no function (eager runs, or
    a function that was already instantiated).
    """
    from tensorflow.python.eager import context  # TF backend only.

    eager_context = context.context()
    eager_context.enable_run_metadata()
    eager_context.enable_graph_collection()
    try:
        result = call()
    finally:
        run_metadata = eager_context.export_run_metadata()
        eager_context.disable_graph_collection()
        eager_context.disable_run_metadata()
    graphs = list(getattr(run_metadata, "partition_graphs", []))
    for function_graphs in getattr(run_metadata, "function_graphs", []):
        graphs.extend(function_graphs.partition_graphs)
    if not graphs:
        return result, None
    return result, summarize_partition_graphs(graphs)
