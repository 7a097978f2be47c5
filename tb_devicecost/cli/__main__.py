"""`python -m tb_devicecost.cli`: the same as the `tb-devicecost` command."""

import sys

from tb_devicecost.cli import main

if __name__ == "__main__":
    sys.exit(main())
