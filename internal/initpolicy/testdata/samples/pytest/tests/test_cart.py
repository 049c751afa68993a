import pytest

from cart import total


def test_total_nothing():
    assert total([]) == 0


@pytest.mark.parametrize("prices,want", [pytest.param([250, 100], 350, id="two-items")])
def test_total(prices, want):
    assert total(prices) == want
