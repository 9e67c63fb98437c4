"""What `maxim check` concludes from statuses: one line per node, missing and ERROR fail."""

from maxim_bringup.graph import GRAPHS
from maxim_bringup.health import (console_health, infer_graph, MISSING, split_name,
                                  summarize)


def _st(name, level, message='fine', **values):
    return {'name': name, 'level': level, 'message': message, 'hardware_id': '',
            'values': {k: str(v) for k, v in values.items()}}


def test_status_names_split_into_node_and_component():
    assert split_name('llm: model') == ('llm', 'model')
    assert split_name('camera') == ('camera', '')


def test_every_expected_node_gets_a_line_and_a_missing_one_fails():
    statuses = [_st('llm: model', 0, 'serving gemma', state='active', model='gemma',
                    queue_depth=0, generating='false'),
                _st('memory: database', 1, 'locked: 2 writes journaled', journaled=2),
                _st('console: console', 0, '3 lines shown', lines=3)]
    reports = summarize(statuses, ['memory', 'llm', 'fear'], 3.0)
    assert [r.node for r in reports] == ['memory', 'llm', 'fear', 'console']
    memory, llm, fear, console = reports
    assert memory.level == 'WARN' and not memory.failed and 'journaled' in memory.message
    assert llm.level == 'OK' and llm.values == {'state': 'active', 'model': 'gemma',
                                                'queue_depth': '0'}
    assert fear.level == MISSING and fear.failed and '3 s' in fear.message
    assert console.level == 'OK'
    line = llm.line(8)
    assert line.startswith('OK      llm      serving gemma') and 'queue_depth=0' in line


def test_the_worst_component_decides_and_error_fails():
    reports = summarize([_st('agent: mind', 0), _st('agent: tools', 2, 'sandbox gone')],
                        ['agent'], 3.0)
    assert reports[0].level == 'ERROR' and reports[0].failed
    assert reports[0].message.startswith('tools: sandbox gone')


def test_the_graph_is_inferred_from_who_reports():
    assert infer_graph({'camera', 'llm'}, GRAPHS) == 'robot'
    assert infer_graph({'sim_head', 'llm'}, GRAPHS) == 'sim'
    assert infer_graph({'llm', 'memory'}, GRAPHS) == 'headless'


def test_console_health_counts_lines():
    assert console_health(4).values == {'lines': '4'}
