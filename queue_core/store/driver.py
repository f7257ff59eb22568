"""peewee without psycopg until a PostgreSQL database is made.

peewee imports psycopg when it is imported itself, whatever database the program opens: ~11 MB of
resident memory and ~0.1 s of start-up that a SQLite worker, console or CLI never uses (measured:
`python -c "import queue_core.worker.cli"`, 40 MB and 0.27 s with it, 29 MB and 0.17 s without).
``import_peewee`` imports peewee with psycopg hidden, then wires psycopg into peewee the first time any
``PostgresqlDatabase`` (ours, playhouse's or the application's own) is initialised, so nobody can tell
the difference except by the memory. It must run before anything else imports peewee: importing this
module runs it, and the ``queue_core`` package imports this module first. If peewee was imported
already (the application did it first), or its layout is not the one this wiring knows, nothing is
deferred.
"""

from __future__ import annotations

import importlib
import sys
import threading

# The module globals peewee sets to None when psycopg cannot be imported (peewee 3.17 to 4.x; it leaves
# TransactionStatus undefined then), and the class attributes its psycopg 3 adapter sets from them while
# its class body runs.
PEEWEE_GLOBALS = ("psycopg", "Json_pg3", "Jsonb_pg3")
ADAPTER_STATUSES = {"txn_idle": "IDLE", "txn_inerror": "INERROR", "txn_unknown": "UNKNOWN"}

_wiring = threading.Lock()


def import_peewee():
    """Import peewee without psycopg (see the module's text); return the peewee module."""
    if "peewee" in sys.modules or "psycopg" in sys.modules:
        import peewee

        return peewee
    sys.modules["psycopg"] = None  # ``import psycopg`` raises ImportError while this stands
    try:
        import peewee
    finally:
        if sys.modules.get("psycopg", False) is None:
            del sys.modules["psycopg"]
    if _deferred(peewee):
        initialise = peewee.PostgresqlDatabase.init

        def init(self, *args, **kwargs):
            wire_psycopg(peewee)
            return initialise(self, *args, **kwargs)

        init.__wrapped__ = initialise
        peewee.PostgresqlDatabase.init = init
    else:
        # A peewee this module does not know: import it again, psycopg and all, as if nothing had been
        # deferred. Nothing holds its classes yet: this runs inside the first import of peewee.
        peewee = importlib.reload(peewee)
    return peewee


def _deferred(peewee) -> bool:
    """True when peewee left psycopg out in exactly the way ``wire_psycopg`` knows how to put back."""
    adapter = getattr(peewee, "Psycopg3Adapter", None)
    return (
        all(hasattr(peewee, name) and getattr(peewee, name) is None for name in PEEWEE_GLOBALS)
        and not hasattr(peewee, "TransactionStatus")
        and adapter is not None
        and all(name not in vars(adapter) and getattr(adapter, name, None) is None for name in ADAPTER_STATUSES)
        and hasattr(peewee, "PostgresqlDatabase")
    )


def wire_psycopg(peewee) -> None:
    """Give peewee psycopg as its own import would have (idempotent, thread-safe); no-op without psycopg."""
    if peewee.psycopg is not None:
        return
    with _wiring:
        if peewee.psycopg is None:
            _wire(peewee)


def _wire(peewee) -> None:
    try:
        import psycopg
        from psycopg.pq import TransactionStatus
        from psycopg.types.json import Json, Jsonb
    except ImportError:  # not installed: peewee says "psycopg postgres driver not found", as it always did
        return
    for name, status in ADAPTER_STATUSES.items():
        setattr(peewee.Psycopg3Adapter, name, getattr(TransactionStatus, status))
    peewee.TransactionStatus = TransactionStatus
    peewee.Json_pg3, peewee.Jsonb_pg3 = Json, Jsonb
    peewee.psycopg = psycopg  # last: other threads test this one


import_peewee()
