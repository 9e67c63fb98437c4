"""wait_for_future: a worker thread waits on a future with a timeout, without a callback."""

import threading

from maxim_common.futures import wait_for_future


class Future:
    def __init__(self):
        self._done = threading.Event()

    def done(self):
        return self._done.is_set()

    def set(self):
        self._done.set()


def test_a_future_done_in_time_is_waited_for():
    f = Future()
    threading.Timer(0.05, f.set).start()
    assert wait_for_future(f, 5.0)


def test_a_future_not_done_in_time_is_given_up():
    assert not wait_for_future(Future(), 0.05)
    done = Future()
    done.set()
    assert wait_for_future(done, 0.0)
