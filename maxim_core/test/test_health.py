"""The core nodes' health builders: model server, fear gate, mind, recorder."""

from maxim_common.health import ERROR, OK, WARN
from maxim_core.health import agent_health, fear_health, llm_health, recorder_health


def test_llm_reports_load_state_and_queue_depth():
    h = llm_health('active', 'gemma-3-270m', 1, 4, True, '')
    assert h.level == OK and h.values['model_loaded'] == 'true'
    assert h.values['queue_depth'] == '1' and h.values['generating'] == 'true'
    assert llm_health('unconfigured', '', 0, 0, False, '').level == WARN
    failed = llm_health('unconfigured', '', 0, 0, False, 'no such file: x.gguf')
    assert failed.level == ERROR and 'x.gguf' in failed.message
    assert failed.values['model_loaded'] == 'false'
    assert llm_health('inactive', 'gemma', 0, 4, False, '').level == WARN
    full = llm_health('active', 'gemma', 4, 4, True, '')
    assert full.level == WARN and 'queue full' in full.message


def test_fear_warns_when_a_helper_is_missing():
    assert fear_health('passive', 3, 1, True, False, False).level == OK
    no_memory = fear_health('passive', 0, 0, False, False, False)
    assert no_memory.level == WARN and no_memory.values['llm_review'] == 'off'
    no_llm = fear_health('active', 0, 0, True, True, False)
    assert no_llm.level == WARN and 'llm/generate' in no_llm.message


def test_agent_reports_the_sandbox_and_the_mind():
    counts = {'percepts_received': 7, 'episodes_sent': 2}
    ok = agent_health('passive', True, 'bwrap', True, 'bwrap works', True, 0.9, counts)
    assert ok.level == OK and ok.values['sandbox_available'] == 'true'
    assert ok.values['percepts_received'] == '7' and '7 percepts' in ok.message
    refused = agent_health('passive', True, 'bwrap', False, 'bwrap is not installed', True,
                           1.0, counts)
    assert refused.level == WARN and 'bwrap is not installed' in refused.message
    assert refused.values['sandbox_reason'] == 'bwrap is not installed'
    # Tools run as plain processes by choice: no sandbox is no warning.
    assert agent_health('passive', True, 'python', False, 'x', True, 1.0, {}).level == OK
    assert agent_health('passive', True, 'bwrap', True, '', False, 1.0, {}).level == WARN
    assert agent_health('passive', False, 'bwrap', True, '', True, 1.0, {}).level == ERROR


def test_recorder_reports_what_it_writes():
    h = recorder_health('/tmp/r.mcap', 40, '', 0, False)
    assert h.level == OK and h.values['messages_written'] == '40'
    assert recorder_health('', 0, 'ws://127.0.0.1:8765', 3, False).values['live_view'] == \
        'ws://127.0.0.1:8765'
    assert recorder_health('/tmp/r.mcap', 40, '', 0, True).level == WARN


def test_health_fills_a_diagnostic_status():
    from diagnostic_msgs.msg import DiagnosticStatus

    from maxim_common.diagnostics import health_to_status
    st = health_to_status(llm_health('active', 'gemma', 0, 4, False, ''), 'llm: model')
    assert st.level == DiagnosticStatus.OK and st.name == 'llm: model'
    assert st.hardware_id == 'gemma'
    assert {kv.key: kv.value for kv in st.values}['state'] == 'active'
