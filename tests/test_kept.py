"""kvmodel.kept.Kept: the bounded store the volumes, the plan bases and the queue draws share."""

import threading

from kvmodel.kept import Kept


def test_the_least_recently_used_goes_first_and_a_read_is_a_use():
    k = Kept(2)
    k.put("a", 1)
    k.put("b", 2)
    assert k.get("a") == 1  # "a" is now the newest
    k.put("c", 3)  # drops "b", the least recently used
    assert k.get("b") is None and k.get("b", "none") == "none"
    assert k.values() == (1, 3) and len(k) == 2
    k.put("a", 10)  # a new value for a kept key: no drop
    assert k.values() == (3, 10)
    k.clear()
    assert len(k) == 0 and k.values() == ()


def test_threads_never_leave_it_over_its_size():
    k = Kept(8)

    def fill(base):
        for i in range(2000):
            k.put((base, i), i)
            k.get((base, i - 1))

    threads = [threading.Thread(target=fill, args=(b,)) for b in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(k) == 8
