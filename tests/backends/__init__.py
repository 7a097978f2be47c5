"""Tests of `tb_devicecost/backends/`."""
