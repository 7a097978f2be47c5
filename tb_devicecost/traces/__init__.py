"""Profiler traces digested into our per-step breakdown of the device.

Internal. Below the backends, which start the profilers, and the
recording, which schedules the windows:

- `trace`: our digest of an `.xplane.pb` trace (TensorFlow, JAX), cut
  into steps by our markers; `xspace_schema` reads it with the generated
  `protos/xplane_pb2.py` (`make protos`);
- `torch_trace`: the same digest of a `torch.profiler` Chrome trace;
- `kernels`: device events as compute, communication or memory copies.

Where the captures lie in a run directory is `tb_devicecost.format.captures`.
"""
