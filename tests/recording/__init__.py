"""Tests of `tb_devicecost/recording/`."""
