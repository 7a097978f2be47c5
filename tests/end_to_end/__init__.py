"""Tests across the whole package: recorded GPU runs read again, injected costs measured, damaged log directories survived."""
