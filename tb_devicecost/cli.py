"""The `tb-devicecost` command."""

import argparse
import sys

from tb_devicecost import version


def main(argv=None):
    parser = argparse.ArgumentParser(prog="tb-devicecost")
    parser.add_argument("--version", action="version", version=version.__version__)
    parser.parse_args(argv)
    print(f"tb-devicecost {version.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
