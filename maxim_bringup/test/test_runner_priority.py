"""The runner's executor thread yields to the model's threads (runner.yield_to_model)."""

import os
import threading

import pytest

from maxim_bringup.runner import RunConfig, yield_to_model


@pytest.mark.skipif(not hasattr(os, 'setpriority'), reason='no per-thread priorities here')
def test_the_calling_thread_and_its_new_threads_yield_and_others_keep_theirs():
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    seen = {}

    def executor_thread():
        seen['changed'] = yield_to_model(before + 5)
        seen['own'] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

        def worker():                    # a thread it starts inherits its priority
            seen['worker'] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        t = threading.Thread(target=worker)
        t.start()
        t.join(5.0)

    t = threading.Thread(target=executor_thread)
    t.start()
    t.join(10.0)
    assert seen['own'] == seen['worker'] == before + 5
    assert len(seen['changed']) >= 1
    # The other threads (here: this one, as the model's are) keep theirs.
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before
    assert yield_to_model(0) == []
    assert RunConfig().nice_others == 19


@pytest.mark.skipif(not hasattr(os, 'setpriority'), reason='no per-thread priorities here')
def test_a_background_thread_started_before_yields_too():
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    started, release = threading.Event(), threading.Event()
    seen = {}

    def faces():                       # attention's face detector, started at configure
        started.set()
        release.wait(10.0)
        seen['faces'] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    bg = threading.Thread(target=faces, name='attention-faces')
    bg.start()
    started.wait(5.0)
    t = threading.Thread(target=lambda: seen.setdefault('changed', yield_to_model(before + 3)))
    t.start()
    t.join(10.0)
    release.set()
    bg.join(10.0)
    assert seen['faces'] == before + 3
    assert bg.native_id in seen['changed']
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before
