"""The failures view: failed jobs grouped by cause."""
