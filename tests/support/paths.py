"""Where things are: the checkout, the test suite and its recorded data."""

import os

# tests/support/
SUPPORT = os.path.dirname(os.path.abspath(__file__))
# tests/
TESTS = os.path.dirname(SUPPORT)
# The checkout's root (README.md, docs/, frontend/, benchmarks/).
REPO = os.path.dirname(TESTS)
# tests/data/: runs and traces recorded on real machines.
DATA = os.path.join(TESTS, "data")
