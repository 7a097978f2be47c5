"""A clock the tests move by hand."""


class FakeClock:
    """A monotonic clock that only moves when told to."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now

    def advance(self, milliseconds):
        self.now += milliseconds / 1e3
