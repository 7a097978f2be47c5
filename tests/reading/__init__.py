"""Tests of `tb_devicecost/reading/`."""
