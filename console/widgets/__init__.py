"""Widgets of the operator console."""
