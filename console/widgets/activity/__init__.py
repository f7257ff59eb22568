"""The activity view: the last hour per minute."""
