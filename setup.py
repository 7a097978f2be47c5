"""Build script; metadata and options live in setup.cfg.

The tab's frontend has one source, `frontend/` at the top of the repository
(plain ES modules and CSS, no bundler). A wheel ships it as the package's
data, `tb_devicecost/serving/static/`: `build_py` below copies it there in the build
directory, never into the source tree, so git holds the frontend once. An
editable install builds nothing; the plugin then serves `frontend/` in place
(`tb_devicecost.serving.plugin._static_root`). MANIFEST.in puts `frontend/` in the
sdist, so a wheel built from the sdist has it too.
"""

import os

import setuptools
from setuptools.command.build_py import build_py

FRONTEND = "frontend"
STATIC = ("tb_devicecost", "serving", "static")


class build_py_with_frontend(build_py):
    """`build_py` that also copies `frontend/` into `tb_devicecost/serving/static/`."""

    def _frontend_mapping(self):
        """`{file in the build: file in frontend/}`."""
        mapping = {}
        for folder, folders, files in os.walk(FRONTEND):
            folders[:] = sorted(name for name in folders if name != "__pycache__")
            for name in files:
                source = os.path.join(folder, name)
                relative = os.path.relpath(source, FRONTEND)
                mapping[os.path.join(self.build_lib, *STATIC, relative)] = source
        return mapping

    def run(self):
        super().run()
        if self.editable_mode:
            return
        for target, source in self._frontend_mapping().items():
            self.mkpath(os.path.dirname(target))
            self.copy_file(source, target, preserve_mode=False)

    def get_outputs(self, include_bytecode=True):
        outputs = super().get_outputs(include_bytecode)
        if self.editable_mode:  # Already there, by way of get_output_mapping.
            return outputs
        return outputs + list(self._frontend_mapping())

    def get_output_mapping(self):
        return {**super().get_output_mapping(), **self._frontend_mapping()}


setuptools.setup(cmdclass={"build_py": build_py_with_frontend})
