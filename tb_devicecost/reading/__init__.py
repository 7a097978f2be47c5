"""Reading: recorded runs back, through TensorBoard's own data provider.

Internal. `reader` is the one module its users (the plugin, the CLI, the
tests and the benchmarks) import: `read_logdir`, `RunRecord`,
`local_provider`. Behind it:

- `logdir_scan`: a log directory's runs and event files, damaged framing
  and unreadable files said per run; `collisions`: two fits in one run
  directory;
- `provider_reads`: a data provider's reads into `RunRecord`s;
  `step_series`: per-step series of either schema as arrays by column;
- `local_data`: the report's data provider over local event files;
  `without_tensorflow`: TensorBoard's reading without TensorFlow's import.

Nothing here imports the analysis: what a record means is
`tb_devicecost.analysis`'s; what the bytes are is `tb_devicecost.format`'s.
"""
