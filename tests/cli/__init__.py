"""Tests of `tb_devicecost/cli/` and its renderers."""
