"""Tests of `tb_devicecost/serving/`."""
