"""Params YAML reading for the in-process runner."""

import pytest

from maxim_bringup.params import flatten, for_node, load_params, ParamsError


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
