"""Tests of `tb_devicecost/words/`."""
