"""Build script; metadata and options live in setup.cfg."""

import setuptools

setuptools.setup()
