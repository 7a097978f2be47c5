"""The summary format of tb-devicecost: plugin name, schema version, tags.

Everything that the writer, the reader, the plugin and the CLI must agree on
lives here, and `docs/FORMAT.md` documents it. This module imports only
protobuf definitions that ship with TensorBoard, so it is safe to import from
the plugin loader, the CLI and any Keras backend.
"""

import json

from tensorboard.compat.proto import summary_pb2

from tb_devicecost import vocabulary

# The name under which summaries are written and the plugin is registered.
PLUGIN_NAME = "devicecost"

# Bumped whenever a reader of an older version would misread the data.
SCHEMA_VERSION = 1

# Per-step series: one scalar per step at a global step that only increases,
# a tag per column of the step's row (`vocabulary.SERIES_COLUMNS`).
STEP_TAGS = tuple(f"{PLUGIN_NAME}/{column}" for column in vocabulary.SERIES_COLUMNS)
TAG_DATA_WAIT_MS, TAG_COMPUTE_MS, TAG_HOST_OVERHEAD_MS, TAG_BATCH_SIZE, TAG_WARMUP = (
    STEP_TAGS
)
# The series key (a `vocabulary` column name) of each per-step tag.
SERIES_KEY = dict(zip(STEP_TAGS, vocabulary.SERIES_COLUMNS))

# Cumulative JSON documents (rank-0 string tensors). The newest value always
# survives TensorBoard's sampling, so each one is complete on its own.
TAG_AGGREGATE = "devicecost/aggregate"
TAG_RUN_INFO = "devicecost/run_info"
TAG_PLACEMENT = "devicecost/placement"
TAG_TRACE = "devicecost/trace"

JSON_TAGS = (TAG_AGGREGATE, TAG_RUN_INFO, TAG_PLACEMENT, TAG_TRACE)

COMPONENTS = vocabulary.COMPONENTS


class FormatError(ValueError):
    """Data that was written by tb-devicecost cannot be understood."""


class NewerSchemaError(FormatError):
    """Data written by a newer tb-devicecost than this one."""


def create_summary_metadata(data_class):
    """Returns the `SummaryMetadata` for one of our tags.

    Args:
        data_class: `"scalar"` for per-step series, `"tensor"` for the JSON
            documents. TensorBoard drops third-party summaries whose
            `data_class` is unset, so it is always set here.
    """
    data_classes = {
        "scalar": summary_pb2.DATA_CLASS_SCALAR,
        "tensor": summary_pb2.DATA_CLASS_TENSOR,
    }
    if data_class not in data_classes:
        raise ValueError(
            "`data_class` must be one of "
            f"{sorted(data_classes)}. Received: data_class={data_class!r}"
        )
    content = json.dumps({"schema": SCHEMA_VERSION}).encode("utf-8")
    return summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(
            plugin_name=PLUGIN_NAME, content=content
        ),
        data_class=data_classes[data_class],
    )


def check_schema(schema):
    """Raises `FormatError` unless `schema` is a version this code reads."""
    if not isinstance(schema, int) or schema < 1:
        raise FormatError(f"Missing or invalid schema version: {schema!r}")
    if schema > SCHEMA_VERSION:
        raise NewerSchemaError(
            f"Written with schema version {schema}, newer than the "
            f"version {SCHEMA_VERSION} that this tb-devicecost reads. "
            "Upgrade tb-devicecost to read it."
        )


def encode_json(document):
    """Serialises a JSON document for a string tensor (NaN is not allowed)."""
    return json.dumps(document, sort_keys=True, allow_nan=False).encode("utf-8")


def decode_json(value):
    """Parses a JSON document read back from a string tensor.

    Args:
        value: bytes, str, or a numpy 0-d array holding either.

    Raises:
        FormatError: when it is not a JSON object of a known schema.
    """
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    try:
        document = json.loads(value)
    except (TypeError, ValueError) as error:
        raise FormatError(f"Not a JSON document: {error}")
    if not isinstance(document, dict):
        raise FormatError(f"Expected a JSON object, got {type(document).__name__}")
    check_schema(document.get("schema"))
    return document
