"""Screens of the operator console: the enqueue form, the fail-reason prompt, job detail, filter and help."""
