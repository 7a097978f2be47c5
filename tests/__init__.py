"""The test suite: a folder per sub-package of `tb_devicecost/`, helpers in
`support/`, fixtures in `conftest.py` (docs/ARCHITECTURE.md, "The tests")."""
