"""Tests of `tb_devicecost/format/`."""
