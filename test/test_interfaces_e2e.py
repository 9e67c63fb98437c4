"""End to end over real DDS: every maxim_interfaces message, service and action crosses from
this process to a second one and back, fully populated, and arrives equal."""

import os
import subprocess
import sys
import threading
import time

import pytest
import rclpy
from rclpy.action import ActionClient
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node

from helpers.fill import filled
from helpers.interfaces import action_types, message_types, service_types

HERE = os.path.dirname(os.path.abspath(__file__))
# With every core busy (the service tests take busy_machine), a new client found its
# service in at most 3.1 s and the answer came in at most 0.13 s, on the first request.
TIMEOUT = 30.0                 # each wait: ten times the slowest discovery measured
ASK_AGAIN_S = 2.0              # fifteen times the slowest answer: it is lost, ask again


@pytest.fixture(scope='module')
def echo_process():
    proc = subprocess.Popen(
        [sys.executable, os.path.join(HERE, 'helpers', 'echo_all.py')],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ready = threading.Event()

    def watch():
        for line in proc.stdout:
            if line.strip() == 'READY':
                ready.set()

    threading.Thread(target=watch, daemon=True).start()
    assert ready.wait(TIMEOUT), 'echo process did not start'
    yield proc
    proc.stdin.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture(scope='module')
def node(echo_process):
    context = rclpy.Context()
    rclpy.init(context=context)
    n = Node('contract_test', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(n)
    yield n, executor
    n.destroy_node()
    rclpy.try_shutdown(context=context)


def spin_until(executor, done, timeout=TIMEOUT, poke=None, poke_every=0.25):
    deadline = time.monotonic() + timeout
    next_poke = 0.0
    while not done() and time.monotonic() < deadline:
        if poke is not None and time.monotonic() >= next_poke:
            poke()
            next_poke = time.monotonic() + poke_every
        executor.spin_once(timeout_sec=0.05)
    return done()


def test_every_interface_type_is_found():
    assert len(message_types()) >= 20
    assert len(service_types()) >= 12
    names = {a.__name__ for a in action_types()}
    assert {'Generate', 'Deliberate'} <= names


@pytest.mark.parametrize('cls', message_types(), ids=lambda c: c.__name__)
def test_message_crosses_dds(node, cls):
    n, executor = node
    sent = filled(cls, 1)
    got = []
    sub = n.create_subscription(cls, f'contract/echo/{cls.__name__}', got.append, 10)
    pub = n.create_publisher(cls, f'contract/msg/{cls.__name__}', 10)
    try:
        assert spin_until(executor, lambda: bool(got), poke=lambda: pub.publish(sent)), \
            f'{cls.__name__} did not come back'
        assert got[0] == sent
    finally:
        n.destroy_subscription(sub)
        n.destroy_publisher(pub)


@pytest.fixture
def busy_machine():
    """Every core busy for the test's duration (helpers/load.py)."""
    from helpers.load import busy_cores
    with busy_cores() as load:
        yield load


def call(executor, client, request, timeout=TIMEOUT, again_s=ASK_AGAIN_S):
    """The answer to `request` (None: none in `timeout`) and how many times it was sent.

    A client is ready once it has discovered the service, but the service may not yet have
    discovered the client's reply reader: Fast DDS then drops the reply ("client will not
    receive response" in the server's log) and the client would wait its whole budget. An
    unanswered request is sent again after `again_s`, within the one budget (the echo's
    answer does not depend on how often it is asked)."""
    deadline = time.monotonic() + timeout
    sent = 0
    while True:
        future = client.call_async(request)
        sent += 1
        left = deadline - time.monotonic()
        if spin_until(executor, future.done, timeout=max(0.0, min(again_s, left))):
            return future.result(), sent
        client.remove_pending_request(future)
        if time.monotonic() >= deadline:
            return None, sent


@pytest.mark.parametrize('srv', service_types(), ids=lambda c: c.__name__)
def test_service_crosses_dds(node, srv, busy_machine):
    n, executor = node
    t0 = time.monotonic()
    client = n.create_client(srv, f'contract/srv/{srv.__name__}')
    try:
        assert spin_until(executor, lambda: client.service_is_ready())
        ready = time.monotonic()
        answer, sent = call(executor, client, filled(srv.Request, 1))
        print(f'\n{srv.__name__}: ready in {ready - t0:.2f} s, answered in '
              f'{time.monotonic() - ready:.2f} s, sent {sent} time(s)')
        assert answer is not None, f'{srv.__name__}: no answer in {TIMEOUT} s ({sent} sent)'
        assert answer == filled(srv.Response, 2)
        assert busy_machine.busy == len(busy_machine.procs)
    finally:
        n.destroy_client(client)


@pytest.mark.parametrize('act', action_types(), ids=lambda c: c.__name__)
def test_action_crosses_dds(node, act):
    n, executor = node
    client = ActionClient(n, act, f'contract/action/{act.__name__}')
    feedback = []
    try:
        assert spin_until(executor, client.server_is_ready)
        goal_future = client.send_goal_async(
            filled(act.Goal, 1), feedback_callback=lambda f: feedback.append(f.feedback))
        assert spin_until(executor, goal_future.done)
        handle = goal_future.result()
        assert handle.accepted
        result_future = handle.get_result_async()
        assert spin_until(executor, result_future.done)
        assert result_future.result().result == filled(act.Result, 2)
        assert spin_until(executor, lambda: bool(feedback), timeout=5.0)
        assert feedback[0] == filled(act.Feedback, 3)
    finally:
        client.destroy()
