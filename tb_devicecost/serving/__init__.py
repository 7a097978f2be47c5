"""Serving: the Device Cost tab in TensorBoard.

Internal. `plugin_loader` is TensorBoard's entry point (setup.cfg,
`tensorboard_plugins`), light to import; `plugin` holds the routes, thin
over `tb_devicecost.reading` and `tb_devicecost.analysis`, and serves the
frontend (`frontend/`, shipped as `static/` beside this package's modules).
"""
