"""A check's Evidence item is made once for each set of its inputs and handed out again
(evidence._item): the item handed out is the one the check would make, zeros' signs kept apart."""

from __future__ import annotations

from gpuwatch.diagnosis import evidence as ev
from gpuwatch.diagnosis.evidence import REQ, SUP, Checks
from gpuwatch.model.codec import to_json


def _items(value, relax=0.0, kind=SUP, na=""):
    c = Checks("io", relax)
    c.check("x", value, 0.2, ">=", "main thread waiting", kind=kind, na=na)
    return c.items


def test_an_item_handed_out_again_is_the_one_a_check_makes():
    for value, relax, kind, na in [(0.3, 0.0, SUP, ""), (0.3, 1.0, REQ, ""), (0.3, -1.0, REQ, ""), (None, 0.0, SUP, ""),
                                   (None, 0.0, SUP, "no workers"), (1, 0.0, SUP, ""), (True, 0.0, SUP, "")]:
        first = _items(value, relax, kind, na)
        ev._ITEMS.clear()
        fresh = _items(value, relax, kind, na)
        assert first == fresh and to_json(first) == to_json(fresh)
        assert _items(value, relax, kind, na)[0] is fresh[0]  # the same inputs: the same item


def test_a_zero_keeps_its_sign():
    plus, minus = _items(0.0)[0], _items(-0.0)[0]
    assert to_json(plus) != to_json(minus) and '"value":-0.0' in to_json(minus)


def test_the_items_kept_are_bounded(monkeypatch):
    monkeypatch.setattr(ev, "ITEMS_KEPT", 3)
    ev._ITEMS.clear()
    for v in range(10):
        _items(v / 10)
    assert len(ev._ITEMS) <= 3
