"""The Textual operator console of queue-core: live tables, actions and an embedded worker."""
