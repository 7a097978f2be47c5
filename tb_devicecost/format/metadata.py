"""The summary format of tb-devicecost: plugin name, schema version, tags.

Everything that the writer, the reader, the plugin and the CLI must agree on
lives here, and `docs/FORMAT.md` documents it. This module imports only
protobuf definitions that ship with TensorBoard, so it is safe to import from
the plugin loader, the CLI and any Keras backend.
"""

import json

from tensorboard.compat.proto import summary_pb2

from tb_devicecost.format import vocabulary

# The name under which summaries are written and the plugin is registered.
PLUGIN_NAME = "devicecost"
# How the names of our event files end (`writer.SummaryWriter`): a run
# holding one is ours before a byte of it is read.
EVENT_FILE_SUFFIX = ".devicecost"

# Bumped whenever a reader of an older version would misread the data.
# 1: one event per step, a scalar tag per column. 2: blocks of steps
# (`TAG_STEPS`). Readers read every version up to this one.
SCHEMA_VERSION = 2

# Per-step rows, schema 2: one event per block of consecutive steps, a
# rank-2 `DT_FLOAT` tensor of `[steps, len(BLOCK_COLUMNS)]` under one tag.
# The event's step is the block's first global step (row `i` is step
# `step + i`); its wall time is the first row's, and the `wall_time` column
# holds each row's seconds after it. TensorBoard samples whole blocks (its
# data server keeps 100 tensors per tag), so a sampled block still holds
# every step it covers.
TAG_STEPS = f"{PLUGIN_NAME}/steps"
BLOCK_COLUMNS = vocabulary.ROW_COLUMNS[1:]
# Rows per block at most: blocks stay a few kB, and a run's blocks many
# enough for TensorBoard's sample of them to spread over the run.
MAX_BLOCK_ROWS = 1024

# Per-step series, schema 1: one scalar per step at a global step that only
# increases, a tag per column of the step's row (`vocabulary.SERIES_COLUMNS`).
# Still read; no longer written.
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
            documents and blocks of steps. TensorBoard drops third-party
            summaries whose `data_class` is unset, so it is always set here.
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


# Our documents nest a few levels (trace windows: document, windows, a
# window, its steps, a step); anything deeper is not ours, and is refused
# before it can exhaust the recursion of whoever walks it next.
MAX_DOCUMENT_DEPTH = 32
# The writer keeps documents within 1 MiB (`document_limits.MAX_DOCUMENT_BYTES`);
# older versions wrote trace documents of a few MiB. Larger is not ours.
MAX_DOCUMENT_CHARACTERS = 16 << 20


def decode_json(value):
    """Parses a JSON document read back from a string tensor.

    Args:
        value: bytes, str, or a numpy array holding exactly one of either
            (a rank-0 string tensor, as the writer writes).

    Raises:
        FormatError: when it is not one JSON object of a known schema,
            nested at most `MAX_DOCUMENT_DEPTH` levels and at most
            `MAX_DOCUMENT_CHARACTERS` long.
    """
    size = getattr(value, "size", None)
    if size is not None and hasattr(value, "item"):
        if size != 1:
            raise FormatError(
                "Expected a tensor holding one JSON string, got one of shape "
                f"{list(getattr(value, 'shape', ()))}"
            )
        value = value.item()
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if not isinstance(value, str):
        raise FormatError(f"Expected a JSON string, got {type(value).__name__}")
    if len(value) > MAX_DOCUMENT_CHARACTERS:
        raise FormatError(
            f"The JSON document is {len(value):,} characters long, more than "
            f"the {MAX_DOCUMENT_CHARACTERS:,} a tb-devicecost document can hold"
        )
    try:
        document = json.loads(value)
    except RecursionError:
        raise FormatError(
            f"The JSON document is nested deeper than {MAX_DOCUMENT_DEPTH} levels"
        ) from None
    except (TypeError, ValueError) as error:
        raise FormatError(f"Not a JSON document: {error}") from None
    if not isinstance(document, dict):
        raise FormatError(f"Expected a JSON object, got {type(document).__name__}")
    if _depth_exceeds(document, MAX_DOCUMENT_DEPTH):
        raise FormatError(
            f"The JSON document is nested deeper than {MAX_DOCUMENT_DEPTH} levels"
        )
    check_schema(document.get("schema"))
    return document


def _depth_exceeds(document, limit):
    """Whether `document` nests lists and objects deeper than `limit` (no recursion)."""
    stack = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(value, dict):
            stack.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)
    return False


def check_plugin_content(content):
    """Raises `FormatError` unless a tag's `plugin_data.content` is readable.

    The writer puts `{"schema": SCHEMA_VERSION}` there (`create_summary_metadata`). Empty
    content (metadata a loader did not keep) is accepted; JSON with a schema
    newer than this code raises `NewerSchemaError`, anything else that is
    not such JSON raises `FormatError`.
    """
    if not content:
        return
    if isinstance(content, bytes):
        content = content.decode("utf-8", errors="replace")
    try:
        parsed = json.loads(content)
    except (TypeError, ValueError, RecursionError):
        raise FormatError("Unreadable summary metadata (plugin_data.content)") from None
    if not isinstance(parsed, dict):
        raise FormatError("Unreadable summary metadata (plugin_data.content)")
    try:
        check_schema(parsed.get("schema"))
    except NewerSchemaError as error:
        raise NewerSchemaError(f"Summary metadata: {error}") from None
    except FormatError as error:
        raise FormatError(f"Summary metadata: {error}") from None
