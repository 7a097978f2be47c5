"""Protobuf schemas, compiled with protoc (`make protos`): the XSpace of the
profiler's `.xplane.pb` traces (`xplane.proto`, `xplane_pb2.py`)."""
