"""The memory node's health builder: the database's state as OK / WARN / ERROR."""

from maxim_common.health import ERROR, not_ready, OK, WARN
from maxim_memory.health import database_health


def _status(**kw):
    st = {'ok': True, 'fault': '', 'message': '', 'journaled': 0, 'replayed': 0, 'lost': 0}
    st.update(kw)
    return st


def test_a_writable_database_is_ok():
    h = database_health(_status(), 5, 0, '/tmp/m.db')
    assert h.level == OK and h.message == 'database writable' and h.hardware_id == '/tmp/m.db'
    assert h.values['episodes_stored'] == '5' and h.values['journaled'] == '0'


def test_journaled_writes_warn_and_lost_ones_are_an_error():
    h = database_health(_status(ok=False, fault='locked', journaled=3,
                                message='database is locked'), 3, 0, 'm.db')
    assert h.level == WARN and 'locked' in h.message and '3 writes journaled' in h.message
    lost = database_health(_status(ok=False, fault='disk full', lost=2), 3, 2, 'm.db')
    assert lost.level == ERROR and '2 writes NOT stored' in lost.message
    assert database_health(_status(), 3, 1, 'm.db').level == ERROR


def test_health_becomes_a_diagnostic_status():
    from diagnostic_msgs.msg import DiagnosticStatus

    from maxim_common.diagnostics import health_to_status
    st = health_to_status(database_health(_status(), 1, 0, 'm.db'), 'memory: database')
    assert st.level == DiagnosticStatus.OK and st.hardware_id == 'm.db'
    assert {kv.key: kv.value for kv in st.values}['episodes_stored'] == '1'


def test_a_database_not_open_yet_is_a_warning():
    assert not_ready('the database is not open').level == WARN


def test_an_open_database_not_served_is_a_warning_that_says_so():
    h = database_health(_status(), 2, 0, 'm.db', state='inactive')
    assert h.level == WARN and h.message == 'inactive: database open, not serving'
    assert h.values['state'] == 'inactive'
    assert database_health(_status(), 2, 0, 'm.db').values['state'] == 'active'
