"""peewee without psycopg until PostgreSQL is used (queue_core/store/driver.py), each case in a fresh interpreter."""

from __future__ import annotations

import pytest
from support import run_fresh


def test_a_program_on_sqlite_never_loads_psycopg(tmp_path):
    seen = run_fresh(f"""
        import json, sys
        import queue_core, console.app, queue_core.worker.cli, queue_core.cli.admin
        from queue_core import JobRepository, open_database
        repo = JobRepository(open_database("sqlite:///{tmp_path / "q.db"}"))
        repo.create("echo", {{}})
        import peewee
        print(json.dumps({{"loaded": "psycopg" in sys.modules, "peewee_has_it": peewee.psycopg is not None,
                           "pending": repo.counts()["pending"]}}))
    """)
    assert seen == {"loaded": False, "peewee_has_it": False, "pending": 1}


def test_the_installed_peewee_is_one_whose_psycopg_can_be_deferred():
    # Fails when a peewee upgrade changes the globals the wiring restores: then nothing is deferred (safe)
    # and this module needs a look.
    seen = run_fresh("""
        import json, queue_core, peewee
        from queue_core.store import driver
        wrapped = hasattr(peewee.PostgresqlDatabase.init, "__wrapped__")
        print(json.dumps({"deferred": driver._deferred(peewee), "wrapped": wrapped}))
    """)
    assert seen == {"deferred": True, "wrapped": True}


@pytest.mark.backends("postgresql")
def test_postgresql_gets_psycopg_when_first_used_by_us_or_by_the_application(db_url):
    # The test's own schema: the server's shared database (its public schema) gets no queue tables.
    seen = run_fresh(f"""
        import json, sys
        import queue_core, peewee
        before = "psycopg" in sys.modules
        db = queue_core.open_database({db_url!r})
        ours = db.execute_sql("SELECT 1").fetchone()[0]
        with db.atomic():  # peewee's transaction bookkeeping reads the adapter's status constants
            db.execute_sql("SELECT 2")
        theirs = peewee.PostgresqlDatabase({db_url!r}, prefer_psycopg3=True)
        value = theirs.execute_sql("SELECT %s::int", (3,)).fetchone()[0]
        print(json.dumps({{"before": before, "ours": ours, "theirs": value, "in_transaction": db.in_transaction(),
                           "adapter": type(theirs._adapter).__name__, "json": peewee.Json_pg3 is not None}}))
    """)
    assert seen == {
        "before": False,
        "ours": 1,
        "theirs": 3,
        "in_transaction": False,
        "adapter": "Psycopg3Adapter",
        "json": True,
    }


def test_nothing_is_deferred_when_the_application_imported_peewee_first():
    seen = run_fresh("""
        import json, sys, peewee, queue_core
        wrapped = hasattr(peewee.PostgresqlDatabase.init, "__wrapped__")
        print(json.dumps({"loaded": "psycopg" in sys.modules, "wrapped": wrapped}))
    """)
    assert seen == {"loaded": True, "wrapped": False}


def test_a_peewee_whose_layout_is_unknown_is_imported_again_with_psycopg():
    # As after a peewee upgrade that renames what the wiring restores: nothing may be left without psycopg.
    seen = run_fresh("""
        import json, sys
        import queue_core.store.driver as driver  # the real import: peewee deferred
        sys.modules.pop("peewee")
        driver._deferred = lambda peewee: False
        peewee = driver.import_peewee()
        print(json.dumps({"loaded": "psycopg" in sys.modules, "peewee_has_it": peewee.psycopg is not None,
                          "same": sys.modules["peewee"] is peewee}))
    """)
    assert seen == {"loaded": True, "peewee_has_it": True, "same": True}
