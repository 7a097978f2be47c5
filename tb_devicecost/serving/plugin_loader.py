"""TensorBoard's entry point for the Device Cost tab.

TensorBoard imports this module while starting, and an import error here would
stop it from starting at all: so it imports nothing heavy, and the plugin
itself is imported only in `load`, where TensorBoard catches failures.
"""

from tensorboard.plugins import base_plugin


class DeviceCostPluginLoader(base_plugin.TBLoader):
    """Loads `DeviceCostPlugin` when TensorBoard asks for it."""

    def load(self, context):
        from tb_devicecost.serving.plugin import DeviceCostPlugin

        return DeviceCostPlugin(context)
