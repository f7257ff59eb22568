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
