"""Reading `.xplane.pb` profiler traces: the XSpace protobuf schema.

The schema is `protos/xplane.proto`, the messages and fields of TSL's
`xplane.proto` under a package of our own, compiled with protoc into
`protos/xplane_pb2.py` (`make protos`). JAX and PyTorch processes read
their traces without importing TensorFlow; TensorFlow's own `xplane_pb2`
is only the fallback where our generated module cannot load (a protobuf
runtime older than its code).
"""


class TraceError(ValueError):
    """A trace that cannot be read; the message says why."""


def _tensorflow_xspace():
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    return xplane_pb2.XSpace


def xspace_class():
    """The XSpace message class: our generated one, else TensorFlow's.

    Raises:
        TraceError: when neither imports; the message says what is missing.
    """
    try:
        from tb_devicecost.traces.protos import xplane_pb2
    except Exception as generated_error:  # pylint: disable=broad-except
        try:
            return _tensorflow_xspace()
        except ImportError as error:
            raise TraceError(
                "Reading this profiler trace needs the XSpace protobuf schema: "
                "tb_devicecost's generated xplane_pb2 does not load on the "
                f"installed protobuf package ({type(generated_error).__name__}: "
                f"{generated_error}) and TensorFlow's failed to import ({error}). "
                "The trace is kept for TensorBoard's Profile tab; install a "
                "protobuf of version 4.21 or newer to digest it."
            )
    return xplane_pb2.XSpace


def load_xspace(path):
    """Parses an `.xplane.pb` file.

    Raises:
        TraceError: when no XSpace schema is available (`xspace_class`) or
            the file cannot be read or parsed.
    """
    xspace_type = xspace_class()
    try:
        with open(path, "rb") as trace_file:
            contents = trace_file.read()
    except OSError as error:
        raise TraceError(f"Cannot read trace {path!r}: {error}")
    xspace = xspace_type()
    try:
        xspace.ParseFromString(contents)
    except Exception as error:  # protobuf raises DecodeError or RuntimeError
        raise TraceError(f"Trace {path!r} is not a valid XSpace: {error}")
    if not xspace.planes:
        raise TraceError(f"Trace {path!r} holds no planes (empty or truncated).")
    return xspace
