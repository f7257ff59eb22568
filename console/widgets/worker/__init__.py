"""The embedded worker's pane."""
