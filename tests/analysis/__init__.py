"""Tests of `tb_devicecost/analysis/`."""
