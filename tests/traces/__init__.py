"""Tests of `tb_devicecost/traces/`."""
