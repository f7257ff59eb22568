"""The README's reference parts against the code: the worker's options table and its defaults, the admin CLI's
commands table and their options, the server's options, the HTTP API table against the app's OpenAPI document
(every route, every request body's fields), the migrate lines' schema version, the tests the guarantees name,
"Where things live" against the modules there are, and every ``queue_core.…`` name it tells a reader to use."""

from __future__ import annotations

import argparse
import importlib
import re
from pathlib import Path

from queue_core.cli.admin import build_parser as admin_parser
from queue_core.worker.cli import build_parser as worker_parser

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def table_rows(heading: str) -> str:
    """The table lines of one section (``heading`` up to the next section of its level or above)."""
    start = README.index(heading)
    end = README.index("\n## ", start + len(heading))
    return "\n".join(line for line in README[start:end].splitlines() if line.startswith("| `"))


def test_every_worker_option_has_a_row_in_the_running_workers_table():
    rows = table_rows("## Running workers\n")
    options = [flag for action in worker_parser()._actions for flag in action.option_strings if flag.startswith("--")]
    assert [option for option in options if option != "--help" and f"`{option}" not in rows] == []


def test_every_admin_command_has_a_row_in_the_admin_cli_table():
    rows = table_rows("## Admin CLI\n")
    (commands,) = [a for a in admin_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert [name for name in commands.choices if not re.search(rf"`{name}\b", rows)] == []


def test_every_queue_core_name_the_readme_gives_exists():
    missing = []
    for name in sorted(set(re.findall(r"(?<![-\w.])queue_core(?:\.\w+)+", README))):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):  # the longest importable module, then attributes
            try:
                found = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attribute in parts[cut:]:
                found = getattr(found, attribute, None)
            if found is None:
                missing.append(name)
            break
    assert missing == []


def test_the_job_queue_methods_the_readme_lists_are_the_protocols():
    """Someone writing a queue of their own from the README implements the methods it names: they were the
    claim/complete methods of an earlier worker, and a queue with only those failed ``check_job_queue``."""
    from queue_core.worker.protocol import JOB_QUEUE_METHODS

    start = README.index("- `queue_core.worker.JobQueue`")
    sentence = README[start : README.index("\n- ", start + 1)].split("names exactly what a `Worker` calls:")[1]
    listed = re.findall(r"`(\w+)`", sentence.split(".")[0])
    assert sorted(listed) == sorted(JOB_QUEUE_METHODS)


# --- defaults and options: what the README's tables promise --------------------------------------------


def section(heading: str) -> str:
    """One section of the README: ``heading`` up to the next heading of its level or above."""
    start = README.index(heading)
    level = heading.split(" ")[0]
    ends = [README.find(f"\n{'#' * n} ", start + len(heading)) for n in range(2, len(level) + 1)]
    return README[start : min([end for end in ends if end != -1], default=len(README))]


def option_row(rows: str, option: str) -> str:
    """The row whose first cell names ``option`` (``| `--poll-interval S`, `--max-poll-interval S` | ...``)."""
    (row,) = [line for line in rows.splitlines() if re.search(rf"`{re.escape(option)}\b", line.split(" | ")[0])]
    return row


def test_the_running_workers_table_gives_each_options_real_default():
    from queue_core.worker.defaults import DEFAULTS, IDLE_CEILING

    rows = table_rows("## Running workers\n")
    parser_defaults = {a.option_strings[-1]: a.default for a in worker_parser()._actions if a.option_strings}
    expected = {
        "--concurrency": f"({DEFAULTS.concurrency:g})",
        "--processes": f"({parser_defaults['--processes']:g}: ",
        "--poll-interval": f"({DEFAULTS.poll_interval:g}; {IDLE_CEILING:g}, or `--poll-interval` if longer)",
        "--stale-after": f"({DEFAULTS.stale_after:g})",
        "--shutdown-timeout": f"({DEFAULTS.shutdown_timeout:g})",
        "--ack-delay": f"({DEFAULTS.ack_delay:g})",
        "--prune-after": "(off)",
        "--metrics-port": "(off)",
        "--log-level": f"({parser_defaults['--log-level']})",
        "--log-format": f"({parser_defaults['--log-format']})",
    }
    assert parser_defaults["--prune-after"] is DEFAULTS.prune_after is None
    assert parser_defaults["--metrics-port"] is None
    assert {option: text for option, text in expected.items() if text not in option_row(rows, option)} == {}


def test_every_admin_commands_options_are_in_its_rows_of_the_table():
    rows = table_rows("## Admin CLI\n").splitlines()
    (commands,) = [a for a in admin_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    missing = {}
    for name, parser in commands.choices.items():
        own = "\n".join(row for row in rows if re.search(rf"`{name}\b", row.split(" | ")[0]))
        shown = [a for a in parser._actions if a.help != argparse.SUPPRESS]  # cancel's hidden --cause: an error
        options = [flag for a in shown for flag in a.option_strings if flag.startswith("--")]
        if absent := [flag for flag in options if flag not in ("--help", "--db") and f"`{flag}" not in own]:
            missing[name] = absent
    assert missing == {}


def test_every_server_option_and_its_default_is_in_the_http_api_section():
    from queue_core.server.app import DEFAULT_MAX_BODY_BYTES
    from queue_core.server.cli import build_parser as server_parser

    text = section("## HTTP API\n")
    options = {a.option_strings[-1]: a.default for a in server_parser()._actions if a.option_strings}
    assert [flag for flag in options if flag != "--help" and f"`{flag}`" not in text] == []
    assert f"`--host` (default `{options['--host']}`)" in text
    assert f"`--port` (1-65535, default {options['--port']})" in text
    assert DEFAULT_MAX_BODY_BYTES == 1024 * 1024 and "`--max-body-bytes` (default 1 MiB)" in text


# --- the HTTP API table against the app's own OpenAPI document -------------------------------------------

ROUTE = re.compile(r"`(GET|POST|PUT|PATCH|DELETE) (/[^`?]*)")


def api_schema(tmp_path) -> dict:
    from queue_core.server.app import create_app
    from queue_core.store.database import open_database

    db = open_database(f"sqlite:///{tmp_path / 'api.db'}")
    try:
        return create_app(db).openapi()
    finally:
        db.close()


def api_rows() -> list[tuple[list[tuple[str, str]], str, str]]:
    """Each row of the endpoints table: its routes (method, path with every {param} as {}), body and answer."""
    rows = []
    for line in table_rows("## HTTP API\n").splitlines():
        first, body, answer = line.strip().strip("|").split("|")  # no cell holds a |
        routes = [(method, re.sub(r"\{[^}]*\}", "{}", path)) for method, path in ROUTE.findall(first)]
        rows.append((routes, body, answer))
    return rows


def test_every_route_of_the_server_has_a_row_in_the_http_api_table_and_every_row_a_route(tmp_path):
    served = {
        (method.upper(), re.sub(r"\{[^}]*\}", "{}", path))
        for path, operations in api_schema(tmp_path)["paths"].items()
        for method in operations
    }
    documented = {route for routes, _, _ in api_rows() for route in routes}
    assert sorted(served - documented) == []
    assert sorted(documented - served) == []


def test_each_request_body_in_the_http_api_table_names_the_routes_fields(tmp_path):
    """``{a, b?}``: the body's fields, ``?`` marking the optional ones; ``...`` means more than those shown."""
    schema = api_schema(tmp_path)
    components = schema["components"]["schemas"]
    operations = {
        (method.upper(), re.sub(r"\{[^}]*\}", "{}", path)): operation
        for path, by_method in schema["paths"].items()
        for method, operation in by_method.items()
    }
    wrong = {}
    for routes, body, _ in api_rows():
        bodies = re.findall(r"`\{([^`]*)\}`", body)
        for route, listed in zip(routes, bodies, strict=False):
            request = operations[route].get("requestBody")
            if request is None:
                wrong[route] = f"the README gives {{{listed}}}, the route takes no body"
                continue
            (ref,) = [
                option["$ref"]
                for option in request["content"]["application/json"]["schema"].get(
                    "anyOf", [request["content"]["application/json"]["schema"]]
                )
                if "$ref" in option
            ]
            model = components[ref.rsplit("/", 1)[1]]
            real = {name + ("" if name in model.get("required", []) else "?") for name in model["properties"]}
            given = {field.strip() for field in listed.split(",") if field.strip() != "..."}
            if (given - real) if "..." in listed else (given != real):
                wrong[route] = (sorted(given), sorted(real))
        for route in routes[len(bodies) :]:
            request = operations[route].get("requestBody")
            if request is not None and request.get("required"):
                wrong[route] = "the route needs a body the README does not give"
    assert wrong == {}


def test_the_workers_row_lists_every_field_of_a_worker(tmp_path):
    fields = api_schema(tmp_path)["components"]["schemas"]["WorkerOut"]["properties"]
    (answer,) = [answer for routes, _, answer in api_rows() if routes == [("GET", "/workers")]]
    listed = re.search(r"\{workers: \[\{([^}]*)\}\]\}", answer).group(1)
    assert sorted(field.strip() for field in listed.split(",")) == sorted(fields)


# --- the rest of the reference ------------------------------------------------------------------------


def test_the_quoted_migrate_lines_give_this_queue_cores_schema_version():
    from queue_core.store.schema import SCHEMA_VERSION

    text = " ".join(README.split())  # a quoted line may wrap
    found = re.findall(r"made the queue's tables in \S+ \(schema version (\d+)\)", text)
    found += re.findall(r"upgraded the queue's tables in \S+ from schema version \d+ to (\d+)", text)
    found += re.findall(r"older than this queue_core's (\d+)", text)
    assert len(found) >= 4 and set(found) == {str(SCHEMA_VERSION)}


def test_every_test_the_guarantees_name_exists():
    text = section("## Guarantees\n")
    tests = Path(__file__).resolve().parent
    named = set(re.findall(r"`(test_\w+)`", text))
    assert named and sorted(name for name in named if not list(tests.rglob(f"{name}.py"))) == []
    paths = re.findall(r"`(tests/[\w/]+\.py)`", text)
    assert [path for path in paths if not (tests.parent / path).exists()] == []


def modules(package: Path) -> set[str]:
    return {path.name for path in package.glob("*.py") if path.name not in ("__init__.py", "__main__.py")}


def test_where_things_live_names_every_module():
    text = section("## Where things live\n")
    bullets = {bullet.split("`")[1]: bullet for bullet in re.split(r"\n- ", text)[1:]}
    root = Path(__file__).resolve().parent.parent
    # The bullets led by a module of queue_core itself (`queue_core/rules.py`: ...; `clock.py` ...).
    top = "\n".join(
        f"`{lead.split('/')[1]}` {bullet}"
        for lead, bullet in bullets.items()
        if re.fullmatch(r"queue_core/\w+\.py", lead)
    )
    where = {
        "queue_core": top,
        "queue_core/store": bullets["queue_core/store/"],
        "queue_core/worker": bullets["queue_core/worker/"],
        "queue_core/server": bullets["queue_core/server/"],
        "queue_core/server/routes": bullets["queue_core/server/"],
        "queue_core/cli": bullets["queue_core/cli/"],
        "console": bullets["console/"],
    }
    missing = {
        package: sorted(name for name in modules(root / package) if f"`{name}`" not in bullet)
        for package, bullet in where.items()
    }
    widgets = {path.name for path in (root / "console" / "widgets").iterdir() if (path / "__init__.py").exists()}
    missing["console/widgets"] = sorted(name for name in widgets if f"`{name}/`" not in bullets["console/"])
    assert {package: names for package, names in missing.items() if names} == {}


def test_the_events_list_of_running_workers_names_every_event_kind():
    from queue_core.worker.events import EVENT_KINDS

    text = section("## Running workers\n")
    events = text[text.index("Events: ") : text.index("While the worker's own logging set-up", text.index("Events: "))]
    assert [kind for kind in EVENT_KINDS if f"`{kind}`" not in events] == []


def test_the_table_headers_the_readme_shows_are_the_commands(tmp_path, capsys):
    """``python -m queue_core queues   # QUEUE PAUSED ...``: the comment is the header a reader will see."""
    from queue_core.cli.admin import main

    url = f"sqlite:///{tmp_path / 'queue.db'}"
    assert main(["--db", url, "migrate"]) == 0
    shown = dict(re.findall(r"^python -m queue_core (queues|workers) +# ([A-Z ]+)$", README, re.MULTILINE))
    assert set(shown) == {"queues", "workers"}
    for command, header in shown.items():
        capsys.readouterr()
        assert main(["--db", url, command]) == 0
        assert capsys.readouterr().out.split() == header.split()


def test_the_enqueue_rows_defaults_are_what_enqueue_gives_a_job(tmp_path, capsys):
    import json

    from queue_core.cli.admin import main

    row = option_row(table_rows("## Admin CLI\n"), "enqueue")
    assert main(["--db", f"sqlite:///{tmp_path / 'queue.db'}", "enqueue", "echo"]) == 0
    job = json.loads(capsys.readouterr().out)
    stated = {
        "--payload JSON": f"(`{json.dumps(job['payload'])}`)",
        "--priority": f"(`{job['priority_label']}`)",
        "--max-retries N": f"({job['max_retries']})",
        "--delay SECONDS": "(0)" if job["run_at"] == job["created_at"] else "a delay",
        "--timeout SECONDS": "(no limit)" if job["timeout"] is None else "a timeout",
        "--queue NAME": f"(`{job['queue']}`)",
    }
    assert {
        option: text for option, text in stated.items() if not re.search(rf"`{option}`[^|(]*{re.escape(text)}", row)
    } == {}


def test_a_job_on_the_wire_is_every_column_plus_what_the_readme_adds(tmp_path):
    from queue_core.store.models import Job

    text = " ".join(section("## HTTP API\n").split())
    added = re.search(r"A job is every column of `jobs`, (.*?), times in ISO 8601 UTC\.", text).group(1)
    extra = set(api_schema(tmp_path)["components"]["schemas"]["JobOut"]["properties"]) - set(Job._meta.fields)
    assert [field for field in sorted(extra) if f"`{field}`" not in added] == []


def test_the_job_model_section_names_every_column_of_every_table():
    from queue_core.store import models

    text = section("## The job model\n")
    flat = " ".join(text.split())
    guide = re.search(r"One table, `jobs`, with the columns of the original guide, unchanged: `([^`]*)`", flat)
    columns = {name.split(" (")[0].strip() for name in guide.group(1).split(",")}
    columns |= set(re.findall(r"^\| `(\w+)` \|", text, re.MULTILINE))
    assert columns == set(models.Job._meta.fields)
    for table, model in (
        ("job_errors", models.JobError),
        ("workers", models.WorkerRecord),
        ("queues", models.QueueRecord),
    ):
        listed = re.search(rf"`{table}` \((.*?)\) (?:is|holds)", flat).group(1)
        named = set(re.findall(r"\b\w+\b", re.sub(r"\([^)]*\)", "", listed.replace("`", ""))))
        assert set(model._meta.fields) - {"id"} <= named, table
