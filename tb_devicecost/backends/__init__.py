"""What each Keras backend needs measured its own way, one module a backend.

As Keras organises `keras/src/backend/{jax,tensorflow,torch}/`:

- `keras_loop`: every use of Keras internals (the callback list around the
  batch hooks, the epoch iterator), shared by all backends;
- `asynchronous`: step timing under asynchronous dispatch, shared by JAX
  and PyTorch;
- `jax`, `torch`: how each tells that a step is complete without waiting
  for it, its devices and its handover of a batch;
- `devices`: devices, variables and placement documents of the backends
  that cannot tell the op placement of a step.
"""
