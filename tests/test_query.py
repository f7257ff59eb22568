"""queue_core.store.query: the operator's job query, parsed without a database and run on both backends."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queue_core.store.query import JobQuery, QueryError, Term, parse_query


def ids(repo, text: str) -> list[int]:
    return sorted(job.id for job in repo.Job.select().where(parse_query(text).condition(repo)))


def test_qualifiers_and_free_text_parse_into_terms():
    query = parse_query('type:send-invoice status:failed payload.invoice:78 error:"card declined" timeout')
    assert query.terms == (
        Term("type", "send-invoice"),
        Term("status", "failed"),
        Term("payload", "78", "invoice"),
        Term("error", "card declined"),
        Term("text", "timeout"),
    )
    assert not parse_query("   ")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("colour:red", "unknown qualifier colour:"),
        ("type:a\x00b", "printable text"),
        ("id:abc", "id: takes a job id"),
        ("id:99999999999999999999999", "id: a job id has at most 18 digits, not 23"),
        ("status:done", "status: is one of"),
        ("type:", "type: needs a value"),
        ("payload.a.b:1", "a payload key is"),
        ('error:"unclosed', "a quote is not closed"),
    ],
)
def test_a_bad_query_says_what_is_wrong(text, says):
    with pytest.raises(QueryError) as caught:
        parse_query(text)
    assert says in str(caught.value)


def test_a_query_finds_jobs_by_every_qualifier(repo):
    invoice, _ = repo.create("send-invoice", {"invoice": 78, "to": "ann@example.com"}, queue="mail")
    other, _ = repo.create("send-invoice", {"invoice": 79}, max_retries=0)
    report, _ = repo.create("report", {"month": "2026-01"})
    claimed = repo.claim("host-a:1", types=["send-invoice"], queues=["default"])
    assert claimed.id == other.id
    repo.fail(other.id, "Card declined (50%_off)", worker_id="host-a:1", attempt=claimed.attempt)
    assert ids(repo, f"id:{report.id}") == [report.id]
    assert ids(repo, "type:send-invoice") == [invoice.id, other.id]
    assert ids(repo, "queue:mail") == [invoice.id]
    assert ids(repo, "status:failed") == [other.id]
    assert ids(repo, "worker:host-a:1") == [other.id]
    assert ids(repo, 'error:"card declined"') == [other.id]  # case ignored
    assert ids(repo, "error:50%_off") == [other.id] and ids(repo, "error:5%off") == []  # wildcards are literal
    assert ids(repo, "payload.invoice:78") == [invoice.id]
    assert ids(repo, "payload.month:2026-01") == [report.id]
    assert ids(repo, "ann@example") == [invoice.id]  # free text: the payload
    assert ids(repo, "declined") == [other.id]  # free text: the latest error
    assert ids(repo, "type:send-invoice payload.invoice:79") == [other.id]  # AND
    assert ids(repo, "") == [invoice.id, other.id, report.id]


def test_a_payload_field_reads_as_the_same_text_on_every_backend(repo):
    """payload.KEY:VALUE compares the field as text, the text PostgreSQL's ->> gives: SQLite's json_extract read
    true as 1 and false as 0, and an integer past 64 bits as a float (1.0e+19)."""
    yes, _ = repo.create("t", {"flag": True})
    no, _ = repo.create("t", {"flag": False})
    one, _ = repo.create("t", {"flag": 1})
    text, _ = repo.create("t", {"flag": "true"})
    big, _ = repo.create("t", {"n": 10**19})
    repo.create("t", {"flag": None})
    assert ids(repo, "payload.flag:true") == [yes.id, text.id]
    assert ids(repo, "payload.flag:false") == [no.id]
    assert ids(repo, "payload.flag:1") == [one.id]
    assert ids(repo, "payload.flag:0") == []
    assert ids(repo, f"payload.n:{10**19}") == [big.id]
    assert ids(repo, "payload.flag:null") == []  # a JSON null is no text at all


def test_a_payload_number_object_or_array_reads_as_stored_on_every_backend(repo):
    """A field that is not a string compares as its stored JSON text, on both backends: PostgreSQL's jsonb
    rewrote numbers (1e+20 as 100000000000000000000, 1e-07 as 0.0000001, -0.0 as 0.0) and objects (a space
    after each ':' and ',', keys reordered), so the same query found other jobs there than on SQLite."""
    huge, _ = repo.create("t", {"x": 1e20})
    tiny, _ = repo.create("t", {"x": 1e-07})
    negative_zero, _ = repo.create("t", {"x": -0.0})
    nested, _ = repo.create("t", {"x": {"b": 1, "a": [1, 2]}})
    listed, _ = repo.create("t", {"x": [1, "two"]})
    assert ids(repo, "payload.x:1e+20") == [huge.id]
    assert ids(repo, "payload.x:100000000000000000000") == []
    assert ids(repo, "payload.x:1e-07") == [tiny.id]
    assert ids(repo, "payload.x:-0.0") == [negative_zero.id]
    assert ids(repo, 'payload.x:{"b":1,"a":[1,2]}') == [nested.id]
    assert ids(repo, 'payload.x:[1,"two"]') == [listed.id]


def test_text_with_capital_letters_beyond_ascii_is_found_as_typed_and_in_other_case(repo):
    """Text matches ignore case. SQLite's LOWER() lowers only ASCII letters (so may PostgreSQL's, by its collation),
    and a payload keeps other letters as JSON escapes (\\u00c9, which no LOWER() touches): an error or a payload
    value with a capital like É was found by no search, not even one typed exactly as stored."""
    job, _ = repo.create("t", {"name": "ÉMILE", "city": "Zoë-Ünal"}, max_retries=0)
    repo.create("t", {"name": "emile"})  # no accent: found by none of these
    claimed = repo.claim("w", types=["t"])
    assert claimed.id == job.id
    repo.fail(job.id, "ÉCHEC de paiement", worker_id="w", attempt=claimed.attempt)
    for typed in ("ÉCHEC", "Échec", "échec"):
        assert ids(repo, f"error:{typed}") == ids(repo, typed) == [job.id], typed
    for typed in ("ÉMILE", "Émile", "émile", "Zoë-Ünal"):
        assert ids(repo, typed) == [job.id], typed


def test_sql_in_a_query_is_only_ever_a_value(repo):
    job, _ = repo.create("t", {"note": "x'); DROP TABLE jobs; --"})
    assert ids(repo, "type:'OR'1'='1") == []
    assert ids(repo, '"\'); DROP TABLE jobs; --"') == [job.id]
    assert repo.find_by_id(job.id) is not None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=80))
def test_any_text_either_parses_and_runs_or_says_why(repo, text):
    """Fuzz: whatever an operator types is a QueryError, or a query the database runs (never a crash, never
    SQL of its own)."""
    try:
        query = parse_query(text)
    except QueryError as exc:
        assert str(exc)
        return
    with repo.db.atomic() as transaction:
        list(repo.Job.select(repo.Job.id).where(query.condition(repo)).limit(5))
        transaction.rollback()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=80))
def test_the_sql_of_a_query_never_holds_what_was_typed(repo, text):
    """Fuzz: the SQL text of a query depends only on which qualifiers it has; every value typed (and every
    payload key) is a bound parameter. Same-shaped terms with other values give exactly the same SQL."""
    try:
        query = parse_query(text)
    except QueryError:
        return
    shape = tuple(Term(t.field, "1" if t.field == "id" else "v", "k" if t.key else None) for t in query.terms)
    job = repo.Job
    typed_sql, typed_params = job.select(job.id).where(query.condition(repo)).sql()
    shape_sql, _ = job.select(job.id).where(JobQuery("", shape).condition(repo)).sql()
    assert typed_sql == shape_sql
    assert len(typed_params) >= len(query.terms)  # each term brought its value as a parameter


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["id", "type", "queue", "status", "worker", "error", "payload.k", None]),
            st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12),
        ),
        max_size=5,
    )
)
def test_quoted_values_round_trip(pairs):
    """A value in quotes, with quotes and backslashes escaped, comes back exactly as typed."""
    text = " ".join((f"{q}:" if q else "") + '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for q, v in pairs)
    try:
        query = parse_query(text)
    except QueryError:
        return  # e.g. id:"x" or status:"nope": refused with a reason
    assert [term.value for term in query.terms] == [v for _, v in pairs]


def test_a_payload_holding_a_nul_leaves_payload_searches_working(repo):
    # JSON allows the escape \u0000 and the payload column keeps it; PostgreSQL's jsonb refuses it, and one
    # such row made every payload.KEY: search fail there.
    odd, _ = repo.create("t", {"k": "a\u0000b"})
    repo.create("t", {"k": "\\\u0000\u0000", "\u0000": 1})  # a backslash before two NULs; a NUL key
    plain, _ = repo.create("t", {"k": "v"})
    written_out, _ = repo.create("t", {"k": "\\u0000"})  # a backslash, then "u0000": six characters
    assert ids(repo, "payload.k:v") == [plain.id]
    assert ids(repo, "payload.k:\\u0000") == [written_out.id]
    assert repo.find_by_id(odd.id).payload == {"k": "a\u0000b"}


def test_a_payload_holding_a_lone_surrogate_leaves_payload_searches_working(repo):
    # JSON allows the escape of a lone surrogate (the API takes {"k": "\\ud800"}) and the payload column keeps
    # it; PostgreSQL's jsonb refuses it, and one such row made every payload.KEY: search there a 422.
    repo.create("t", {"k": "\ud800", "\udc00": 1})  # a lone high surrogate; a lone low one as a key
    repo.create("t", {"k": "\udc00\ud800x"})  # low then high: no pair, two lone ones
    repo.create("t", {"k": "a\ud83d"})  # a high surrogate ending the string
    plain, _ = repo.create("t", {"k": "v"})
    emoji, _ = repo.create("t", {"k": "\U0001f600"})  # a real pair, escaped as \\ud83d\\ude00
    written_out, _ = repo.create("t", {"k": "\\ud800"})  # a backslash, then "ud800": six characters
    assert ids(repo, "payload.k:v") == [plain.id]
    assert ids(repo, "payload.k:\U0001f600") == [emoji.id]
    assert ids(repo, "payload.k:\\ud800") == [written_out.id]


def test_free_text_finds_accents_other_scripts_and_quotes_in_a_payload(repo):
    """Payloads are stored with JSON's escapes ("Zo\\u00eb", a quote as \\"): free text matched only ASCII
    without quotes."""
    zoe, _ = repo.create("greet", {"name": "Zoë ☃ 名前"})
    quoted, _ = repo.create("greet", {"say": 'he said "hi"'})
    repo.create("greet", {"name": "Zoe"})  # no accent: not a match for "Zoë"
    assert ids(repo, "名前") == ids(repo, "Zoë ☃") == ids(repo, "ë") == [zoe.id]
    assert ids(repo, "zoë") == ids(repo, "ZOË") == [zoe.id]  # case ignored, as for ASCII
    assert ids(repo, '"said \\"hi\\""') == [quoted.id]
    assert len(ids(repo, "zoe")) == 1  # the plain one only
