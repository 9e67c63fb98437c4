"""LogThrottle: one line per kind of bad input per period, and the count of the rest."""

import pytest

from maxim_common.throttle import LoggerHandler, LogThrottle, ThrottledLog


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_a_flood_is_one_line_then_one_line_a_period_with_the_count():
    clock = Clock()
    throttle = LogThrottle(2.0, clock=clock)
    lines = [throttle('goal', f'rejected goal {i}') for i in range(2000)]
    assert [ln for ln in lines if ln] == ['rejected goal 0']
    assert throttle.pending() == {'goal': 1999} and throttle.suppressed_total == 1999
    clock.t = 2.0
    assert throttle('goal', 'rejected goal x') == \
        'rejected goal x (1999 more like it suppressed since the last one)'
    assert throttle.pending() == {}


def test_kinds_are_throttled_apart():
    clock = Clock()
    throttle = LogThrottle(1.0, clock=clock)
    assert throttle('a', 'one') == 'one' and throttle('b', 'two') == 'two'
    assert throttle('a', 'three') is None
    clock.t = 1.5
    assert throttle('a', 'four').endswith('(1 more like it suppressed since the last one)')
    assert throttle('b', 'five') == 'five'


def test_the_period_must_be_positive():
    with pytest.raises(ValueError):
        LogThrottle(0.0)


def test_a_throttled_log_writes_on_the_level_asked():
    clock = Clock()
    warned, errors = [], []
    log = ThrottledLog(warned.append, 1.0, errors.append, clock=clock)
    for _ in range(3):
        log('bad', 'a bad image')
        log('worse', 'an unreadable image', error=True)
    assert warned == ['a bad image'] and errors == ['an unreadable image']
    assert log.throttle.suppressed_total == 4
    clock.t = 1.0
    log('bad', 'a bad image')
    assert warned[-1] == 'a bad image (2 more like it suppressed since the last one)'
    only_warn = ThrottledLog(warned.append, clock=clock)
    only_warn('x', 'an error with no error logger', error=True)
    assert warned[-1] == 'an error with no error logger'


def test_a_long_line_is_cut_saying_how_much():
    lines = []
    log = ThrottledLog(lines.append, max_chars=10)
    log('bad', 'x' * 25)
    assert lines == ['xxxxxxxxxx … (15 more characters)']


def test_python_log_records_go_to_the_node_logger_once():
    import logging

    class Logger:
        def __init__(self):
            self.lines = []

        def info(self, text):
            self.lines.append(('info', text))

        def warning(self, text):
            self.lines.append(('warning', text))

        def error(self, text):
            self.lines.append(('error', text))

    ros = Logger()
    handler = LoggerHandler(ros)
    handler.attach('maxim_test_pkg')
    try:
        # A package's own logger, as a node's process makes it: `launch` (imported here by the
        # launch tests) sets a logger class of its own whose loggers do not propagate.
        previous = logging.getLoggerClass()
        logging.setLoggerClass(logging.Logger)
        try:
            log = logging.getLogger('maxim_test_pkg.store')
        finally:
            logging.setLoggerClass(previous)
        log.info('opened')
        log.warning('journaled')
        log.error('lost')
        log.debug('not shown')
        assert ros.lines == [('info', 'opened'), ('warning', 'journaled'), ('error', 'lost')]
        assert not logging.getLogger('maxim_test_pkg').propagate
    finally:
        handler.detach('maxim_test_pkg')
    assert logging.getLogger('maxim_test_pkg').propagate
