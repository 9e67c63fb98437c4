"""Params YAML reading for the in-process runner."""

import pytest

from maxim_bringup.params import (flatten, for_namespace, for_node, load_params,
                                  namespaced_params_file, ParamsError)


def test_nested_yaml_becomes_dotted_names(tmp_path):
    path = tmp_path / 'p.yaml'
    path.write_text(
        '/**:\n  ros__parameters:\n    use_sim_time: true\n'
        'llm:\n  ros__parameters:\n    llm:\n      n_ctx: 4096\n    model_path: ""\n'
        '/robot1/agent:\n  ros__parameters:\n    max_cycles: 3\n')
    params = load_params(str(path))
    assert for_node(params, 'llm') == {'use_sim_time': True, 'llm.n_ctx': 4096,
                                       'model_path': ''}
    assert for_node(params, 'agent') == {'use_sim_time': True, 'max_cycles': 3}
    assert for_node(params, 'unknown') == {'use_sim_time': True}
    assert flatten({'a': {'b': {'c': 1}}}) == {'a.b.c': 1}


@pytest.mark.parametrize('content', ['llm: [1, 2]\n', 'llm:\n  other: 1\n', ': : :\n'])
def test_malformed_params_give_a_clear_error(tmp_path, content):
    path = tmp_path / 'bad.yaml'
    path.write_text(content)
    with pytest.raises(ParamsError):
        load_params(str(path))


def test_missing_file_is_named(tmp_path):
    with pytest.raises(ParamsError, match='not found'):
        load_params(str(tmp_path / 'nope.yaml'))


def test_plain_node_keys_follow_the_namespace(tmp_path):
    data = {'/**': {'ros__parameters': {'use_sim_time': True}},
            'attention': {'ros__parameters': {'percept_period_s': 7.5}},
            '/r2/agent': {'ros__parameters': {'mode': 'active'}}}
    assert for_namespace(data, '') == data
    assert for_namespace(data, '/r1/') == {
        '/**': {'ros__parameters': {'use_sim_time': True}},
        '/r1/attention': {'ros__parameters': {'percept_period_s': 7.5}},
        '/r2/agent': {'ros__parameters': {'mode': 'active'}}}
    path = tmp_path / 'p.yaml'
    path.write_text('attention:\n  ros__parameters:\n    percept_period_s: 7.5\n')
    assert namespaced_params_file(str(path), '') == str(path)
    out = namespaced_params_file(str(path), 'r1', str(tmp_path))
    assert load_params(out) == {'attention': {'percept_period_s': 7.5}}
    assert open(out).read().startswith('/r1/attention:')
    assert namespaced_params_file(str(path), 'r1', str(tmp_path)) == out   # reused
    path.write_text('attention: [1]\n')
    with pytest.raises(ParamsError):
        namespaced_params_file(str(path), 'r1', str(tmp_path))
