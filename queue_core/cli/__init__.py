"""The admin CLI (``python -m queue_core``) and the argument types the other entry points share."""
