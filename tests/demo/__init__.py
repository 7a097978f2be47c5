"""The demo (`demo/`): its scenarios here, and as it ran on an H100."""
