"""The on-disk format: the one place that knows what is written, and how.

Internal: the recording writes through it, the reading and the analysis
read by it; users read the format in docs/FORMAT.md.

- `vocabulary`: the step's names, each with its unit;
- `metadata`: plugin name, schema version, tags, summary metadata, JSON
  encoding and decoding;
- `writer`, `records`: event files written a batch of records at a time;
  TFRecord framing and unframing, and where a file's framing first fails;
- `document_limits`: the bounds of every JSON document written;
- `readable`: which recorded numbers are plausible, and when an aggregate
  is usable;
- `captures`: where profiler traces lie in a run directory;
- `backend_facts`: what the analysis and its words know of each Keras
  backend (what it supports, the input loaders advice may name).
"""
