"""The on-disk format: the one place that knows what is written, and how.

Internal: the writer, the reader and the analysis import these modules;
users read the format in docs/FORMAT.md.
"""
