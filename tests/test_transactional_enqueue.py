"""Transactional enqueue (issue 14, item 2): a job created in the application's transaction commits or rolls
back with it, on both backends."""

from __future__ import annotations

import peewee as pw
import pytest

from queue_core import Queue
from queue_core.handlers import HandlerRegistry


class Order(pw.Model):
    total = pw.IntegerField()

    class Meta:
        table_name = "test_orders"


@pytest.fixture
def shop(live_repo):
    Order.bind(live_repo.db)
    live_repo.db.create_tables([Order])
    queue = Queue(repository=live_repo, registry=HandlerRegistry(with_builtins=False))

    @queue.task("ship")
    def ship(order_id: int) -> None:
        pass

    return queue, ship


def test_the_job_commits_with_the_applications_transaction(shop, live_repo):
    queue, ship = shop
    with live_repo.db.atomic():
        order = Order.create(total=10)
        job = ship.enqueue(order_id=order.id)
        queue.enqueue("audit", {"order": order.id})
    assert Order.select().count() == 1
    assert live_repo.find_by_id(job.id).payload == {"order_id": order.id}
    assert live_repo.counts()["pending"] == 2


def test_the_job_rolls_back_with_the_applications_transaction(shop, live_repo):
    queue, ship = shop
    with pytest.raises(ValueError), live_repo.db.atomic():
        order = Order.create(total=-1)
        job = ship.enqueue(order_id=order.id)
        live_repo.create_many([{"type": "audit"}, {"type": "audit"}])
        queue.enqueue("audit", {"order": order.id})
        raise ValueError("payment refused")
    assert Order.select().count() == 0
    assert live_repo.find_by_id(job.id) is None
    assert live_repo.counts()["pending"] == 0
    assert live_repo.claim("w1") is None  # nothing a worker could ever run


def test_an_explicit_rollback_undoes_a_job_whose_own_statement_succeeded(shop, live_repo):
    _queue, ship = shop
    with live_repo.db.atomic() as transaction:
        ship.enqueue(order_id=1)
        assert live_repo.counts()["pending"] == 1  # visible inside the transaction
        transaction.rollback()
    assert live_repo.counts()["pending"] == 0


def test_tasks_of_two_queues_on_one_url_commit_and_roll_back_with_one_transaction(db_url):
    """An application's task modules, each with its own Queue on the one database: a transaction that enqueued tasks
    of both wrote the second job on that Queue's own connection, outside the transaction. On PostgreSQL it stayed
    when the transaction rolled back; on SQLite it waited for the transaction's write lock, then failed "database
    is locked"."""
    url = f"{db_url}?busy_timeout=200" if db_url.startswith("sqlite") else db_url
    registry = HandlerRegistry(with_builtins=False)
    billing, mail = Queue(url, registry=registry), Queue(url, registry=registry)

    @billing.task("charge")
    def charge(order: int) -> None: ...

    @mail.task("receipt")
    def receipt(order: int) -> None: ...

    db = billing.repository.db  # the application's models use it, as README's outbox example does
    try:
        with pytest.raises(ValueError), db.atomic():
            charge.enqueue(order=1)
            receipt.enqueue(order=1)
            raise ValueError("payment refused")
        assert billing.repository.counts()["pending"] == 0
        assert mail.repository is billing.repository  # one database, one connection per thread
        with db.atomic():
            charge.enqueue(order=2)
            receipt.enqueue(order=2)
        assert sorted(job.type for job in mail.repository.list()) == ["charge", "receipt"]
        mail.close()  # the shared database reconnects for the other Queue, and for this one on its next use
        assert billing.repository.counts()["pending"] == 2 and mail.repository.counts()["pending"] == 2
    finally:
        billing.close()
        mail.close()


def test_queues_on_different_urls_or_given_a_repository_share_nothing(db_url, live_repo, tmp_path):
    registry = HandlerRegistry(with_builtins=False)
    first = Queue(db_url, registry=registry)
    other = Queue(f"sqlite:///{tmp_path / 'other.db'}", registry=registry)
    given = Queue(repository=live_repo, registry=registry)
    try:
        assert first.repository is not other.repository
        assert Queue(db_url, registry=registry).repository is first.repository
        assert given.repository is live_repo and first.repository is not live_repo  # a given one is its owner's
    finally:
        first.close()
        other.close()
