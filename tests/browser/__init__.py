"""The Device Cost tab in a real TensorBoard, driven in Chromium: a module per view."""
