"""The workers view: every registered worker, lost ones in red."""
