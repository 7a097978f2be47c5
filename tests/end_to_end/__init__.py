"""Tests across the whole package: runs recorded on GPUs read again,
injected costs measured, damaged log directories survived."""
