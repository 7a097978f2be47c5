"""Reading `.xplane.pb` profiler traces: the XSpace protobuf schema.

TensorFlow's `xplane_pb2` is used when TensorFlow is already imported;
otherwise a copy of the schema (the fields' names and numbers of
TensorFlow's `xplane.proto`) is built here on the `protobuf` package (a
dependency of TensorBoard), so that JAX and PyTorch processes never import
TensorFlow to read a trace.
"""

import sys

class TraceError(ValueError):
    """A trace that cannot be read; the message says why."""


def _tensorflow_xspace():
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    return xplane_pb2.XSpace


_BUILTIN_XSPACE = []


def _builtin_xspace():
    """The XSpace message class, from a copy of `xplane.proto` (the fields'
    names and numbers of TensorFlow's, under a package of our own in a
    private descriptor pool)."""
    if _BUILTIN_XSPACE:
        return _BUILTIN_XSPACE[0]
    from google.protobuf import descriptor_pb2
    from google.protobuf import descriptor_pool
    from google.protobuf import message_factory

    field_type = descriptor_pb2.FieldDescriptorProto
    package = "tb_devicecost.xplane"
    proto = descriptor_pb2.FileDescriptorProto(
        name="tb_devicecost/xplane.proto", package=package, syntax="proto3"
    )

    def message(name, fields, oneofs=(), nested=()):
        described = proto.message_type.add(name=name)
        for oneof in oneofs:
            described.oneof_decl.add(name=oneof)
        for entry in nested:
            described.nested_type.add().CopyFrom(entry)
        for field_name, number, kind, *rest in fields:
            field = described.field.add(name=field_name, number=number, type=kind)
            field.label = field_type.LABEL_OPTIONAL
            for option in rest:
                if option == "repeated":
                    field.label = field_type.LABEL_REPEATED
                elif isinstance(option, int):
                    field.oneof_index = option
                else:
                    field.type_name = f".{package}.{option}"
        return described

    def map_entry(name, value_type):
        entry = descriptor_pb2.DescriptorProto(name=name)
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=field_type.TYPE_INT64, label=field_type.LABEL_OPTIONAL)
        entry.field.add(
            name="value", number=2, type=field_type.TYPE_MESSAGE,
            label=field_type.LABEL_OPTIONAL, type_name=f".{package}.{value_type}",
        )
        return entry

    int64, uint64 = field_type.TYPE_INT64, field_type.TYPE_UINT64
    string, raw, sub = field_type.TYPE_STRING, field_type.TYPE_BYTES, field_type.TYPE_MESSAGE
    message("XSpace", [
        ("planes", 1, sub, "XPlane", "repeated"), ("errors", 2, string, "repeated"),
        ("warnings", 3, string, "repeated"), ("hostnames", 4, string, "repeated"),
    ])
    message(
        "XPlane",
        [
            ("id", 1, int64), ("name", 2, string), ("lines", 3, sub, "XLine", "repeated"),
            ("event_metadata", 4, sub, "XPlane.EventMetadataEntry", "repeated"),
            ("stat_metadata", 5, sub, "XPlane.StatMetadataEntry", "repeated"),
            ("stats", 6, sub, "XStat", "repeated"),
        ],
        nested=[map_entry("EventMetadataEntry", "XEventMetadata"), map_entry("StatMetadataEntry", "XStatMetadata")],
    )
    message("XLine", [
        ("id", 1, int64), ("display_id", 10, int64), ("name", 2, string),
        ("display_name", 11, string), ("timestamp_ns", 3, int64), ("duration_ps", 9, int64),
        ("events", 4, sub, "XEvent", "repeated"),
    ])
    message(
        "XEvent",
        [
            ("metadata_id", 1, int64), ("offset_ps", 2, int64, 0), ("num_occurrences", 5, int64, 0),
            ("duration_ps", 3, int64), ("stats", 4, sub, "XStat", "repeated"),
        ],
        oneofs=["data"],
    )
    message(
        "XStat",
        [
            ("metadata_id", 1, int64), ("double_value", 2, field_type.TYPE_DOUBLE, 0),
            ("uint64_value", 3, uint64, 0), ("int64_value", 4, int64, 0),
            ("str_value", 5, string, 0), ("bytes_value", 6, raw, 0), ("ref_value", 7, uint64, 0),
        ],
        oneofs=["value"],
    )
    message("XEventMetadata", [
        ("id", 1, int64), ("name", 2, string), ("display_name", 4, string),
        ("metadata", 3, raw), ("stats", 5, sub, "XStat", "repeated"), ("child_id", 6, int64, "repeated"),
    ])
    message("XStatMetadata", [("id", 1, int64), ("name", 2, string), ("description", 3, string)])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    xspace = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.XSpace"))
    _BUILTIN_XSPACE.append(xspace)
    return xspace


def xspace_class():
    """The XSpace message class: TensorFlow's when TensorFlow is imported,
    else our copy of the schema, else TensorFlow's imported now.

    Raises:
        TraceError: when none can be had; the message says what is missing.
    """
    if "tensorflow" in sys.modules:
        try:
            return _tensorflow_xspace()
        except ImportError:
            pass
    try:
        return _builtin_xspace()
    except Exception as builtin_error:  # pylint: disable=broad-except
        try:
            return _tensorflow_xspace()
        except ImportError as error:
            raise TraceError(
                "Reading this profiler trace needs the XSpace protobuf schema: "
                "TensorFlow's xplane_pb2 failed to import "
                f"({error}) and our own copy of the schema could not be built "
                f"on the installed protobuf package ({type(builtin_error).__name__}: "
                f"{builtin_error}). The trace is kept for TensorBoard's Profile tab; "
                "install TensorFlow or a recent protobuf to digest it."
            )


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
