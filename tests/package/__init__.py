"""The package as a whole: its floors (`docs/ARCHITECTURE.md`) and its build."""
