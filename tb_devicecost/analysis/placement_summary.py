"""Where the step ran: the placement document read into a `Placement`.

The placement document (`devicecost/placement`, docs/FORMAT.md) lists the
visible devices, where the first step's ops and the model's variables were
placed, and the ops that ran on the CPU. From them this module names the
device the step ran on, and how that is known.
"""

import re

from tb_devicecost.analysis.guards import as_count
from tb_devicecost.analysis.guards import as_count_map
from tb_devicecost.analysis.guards import as_dict
from tb_devicecost.analysis.guards import as_list
from tb_devicecost.analysis.names import is_accelerator
from tb_devicecost.analysis.run_data import Placement

# Op types that belong on the host in any run: the input pipeline and
# resource bookkeeping. Left out of `cpu_ops_on_accelerator_run`.
_HOST_OP = re.compile(
    r"(Dataset|Iterator|^Optional|^_EagerConst$|^VarIsInitializedOp$"
    r"|^DestroyResourceOp$|PartitionedCall$)"
)


def _device_names(devices):
    names = []
    for key in ("logical", "physical"):
        for device in as_list(as_dict(devices).get(key)):
            name = device.get("name") if isinstance(device, dict) else None
            if isinstance(name, str) and name not in names:
                names.append(name)
    return names


def _busiest(counts):
    return max(counts, key=lambda name: (counts[name], name))


def _where_the_step_ran(visible, ops, variables):
    """(device, how it is known, devices used): where the step ran.

    From the first step's ops (device -> op count): the accelerator holding
    most of them when any accelerator ran some (a GPU step also runs input
    and bookkeeping ops on the host CPU), else the device holding most. No
    op counts: the device holding most variables. Neither: a visible
    device (the first accelerator, else the first), marked
    `"visible_devices"`, since nothing says the step ran there.
    """
    used_ops = {name: n for name, n in ops.items() if n}
    used_variables = {name: n for name, n in variables.items() if n}
    if used_ops:
        accelerators = {n: c for n, c in used_ops.items() if is_accelerator(n)}
        device = _busiest(accelerators or used_ops)
        return device, "ops", sorted(used_ops, key=lambda n: (-used_ops[n], n))
    if used_variables:
        return (
            _busiest(used_variables),
            "variables",
            sorted(used_variables, key=lambda n: (-used_variables[n], n)),
        )
    if visible:
        accelerators = [name for name in visible if is_accelerator(name)]
        return (accelerators or visible)[0], "visible_devices", []
    return None, None, []


def read_placement(placement):
    """A `Placement` from the raw placement document (`{}` reads as nothing
    placed)."""
    placement = as_dict(placement)
    devices = placement.get("devices")
    names = _device_names(devices)
    ops = as_count_map(placement.get("ops"))
    variables = as_count_map(placement.get("variables"))
    accelerator_visible = bool(placement.get("accelerator_visible")) or any(
        is_accelerator(name) for name in names
    )
    models = {}
    for device in as_list(as_dict(devices).get("physical")):
        if isinstance(device, dict) and device.get("model"):
            models[str(device.get("name"))] = str(device["model"])
    device, device_source, devices_used = _where_the_step_ran(names, ops, variables)
    cpu_ops = []
    if device is not None and is_accelerator(device):
        cpu_ops = [
            str(op)
            for op in as_list(placement.get("cpu_op_types"))
            if isinstance(op, str) and not _HOST_OP.search(op)
        ]
    return Placement(
        devices=names,
        device_models=models,
        accelerator_visible=accelerator_visible,
        device=device,
        device_source=device_source,
        devices_used=devices_used,
        variables=variables,
        optimizer_variables=as_count_map(placement.get("optimizer_variables")),
        ops=ops,
        step_ops_captured=bool(placement.get("step_ops_captured", bool(ops))),
        cpu_ops_on_accelerator_run=cpu_ops,
        cross_device_copies=as_count(placement.get("cross_device_copies")),
        input_bytes_per_step=as_count(placement.get("input_bytes_per_step")),
        input_devices=[str(name) for name in as_list(placement.get("input_devices")) if name],
    )
