"""The Textual operator console of queue-core: live tables, actions and an embedded worker."""

# Before any console module imports peewee: queue_core imports it without psycopg (queue_core/store/driver.py),
# ~11 MB less for a console on SQLite.
import queue_core  # noqa: F401
