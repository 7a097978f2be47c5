"""Recording: each step's clock reads, written as TensorBoard summaries.

Internal, except what `tb_devicecost` itself exports (`DeviceCostCallback`,
`StepRecorder`, `sweep`); importing this package loads nothing else, so
Keras is imported only by `callback` (and `batch_sweep`) when used.

- `callback`: `DeviceCostCallback`, Keras's hooks and the fit's lifecycle;
  `step_wrappers`: the recording between hooks, the same on every backend;
- `accounting`: `StepAccounting`, a step's parts from three clock reads and
  the rows in step order; `aggregate`: the exact statistics of the
  `devicecost/aggregate` document; `sigterm`: what a terminated fit writes;
- `recorder`: `StepRecorder`, the same accounting for custom loops;
- `fetch_floor`: the cost of handing over a batch that is already there;
- `profiling`: which steps are traced (`TraceSchedule`); `profiler_window`:
  one window from capture to digest; `trace_budget`: when the default
  device-busy window may open;
- `run_info`, `input_kind`: what a run was and what fed it; `stats`:
  running statistics in constant memory;
- `batch_sweep`: `tb_devicecost.sweep`, short fits over batch sizes and
  devices.

What differs per Keras backend is asked of `tb_devicecost.backends`; the
summaries' format is `tb_devicecost.format`'s.
"""
