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
TIMEOUT = 30.0


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


@pytest.mark.parametrize('srv', service_types(), ids=lambda c: c.__name__)
def test_service_crosses_dds(node, srv):
    n, executor = node
    client = n.create_client(srv, f'contract/srv/{srv.__name__}')
    try:
        assert spin_until(executor, lambda: client.service_is_ready())
        future = client.call_async(filled(srv.Request, 1))
        assert spin_until(executor, future.done)
        assert future.result() == filled(srv.Response, 2)
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
