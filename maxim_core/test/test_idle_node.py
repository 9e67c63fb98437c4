"""The agent node's idle.* parameters: declared with descriptors, defaults of the core,
read-only, a bad value refused with its name; idle.enabled false keeps no task store."""

import pytest

pytestmark = pytest.mark.ros


@pytest.fixture
def ctx():
    import rclpy
    context = rclpy.Context()
    rclpy.init(context=context)
    yield context
    rclpy.try_shutdown(context=context)


def _agent(ctx, tmp_path, **params):
    from rclpy.parameter import Parameter

    from maxim_core.nodes.agent_node import AgentNode
    values = {'workspace_root': str(tmp_path), 'idle.task_db_path': str(tmp_path / 't.db'),
              'idle.provenance_path': str(tmp_path / 'p.jsonl'), **params}
    return AgentNode(context=ctx, autostart=True, parameter_overrides=[
        Parameter(k, value=v) for k, v in values.items()])


def test_idle_parameters_are_declared_with_the_core_defaults(ctx, tmp_path):
    from rcl_interfaces.msg import ParameterType

    from maxim_core.idle.runtime import PARAMS
    node = _agent(ctx, tmp_path)
    try:
        names = [p.name for p in PARAMS]
        descriptors = node.describe_parameters(names)
        for p, d in zip(PARAMS, descriptors):
            assert d.description and d.read_only, p.name
            if p.name == 'idle.allowed_actions':   # a string array, unset = any action
                assert d.type == ParameterType.PARAMETER_STRING_ARRAY
            elif p.name not in ('idle.task_db_path', 'idle.provenance_path'):
                assert node.get_parameter(p.name).value == p.default, p.name
        assert node.get_parameter('idle.require_explicit_goal_tag').value is True
        assert node.get_parameter('idle.drives_enabled').value is True
        spacing = descriptors[names.index('idle.budgets.min_goal_spacing_s')]
        assert spacing.type == ParameterType.PARAMETER_DOUBLE
        assert spacing.floating_point_range[0].from_value == 0.0
        assert node.mind.config.idle.idle.budgets.max_goals_per_hour_in_backoff == 2
        assert node.mind.tasks is not None and node.mind.tasks.path == str(tmp_path / 't.db')
    finally:
        node.destroy_node()


def test_a_bad_idle_parameter_is_refused_by_name(ctx, tmp_path):
    """Configure fails (the node stays unconfigured), the reason names the parameter."""
    node = _agent(ctx, tmp_path, **{'idle.output_mode': 'poetry'})
    try:
        assert node.mind is None and 'output_mode' in node.last_error
    finally:
        node.destroy_node()


def test_idle_disabled_keeps_no_tasks(ctx, tmp_path):
    from maxim_core.nodes.agent_services import submit_task
    from maxim_interfaces.srv import SubmitTask
    node = _agent(ctx, tmp_path, **{'idle.enabled': False})
    try:
        assert node.mind.tasks is None and node.mind.idle is None
        response = submit_task(node.mind, SubmitTask.Request(op=SubmitTask.Request.OP_ADD),
                               SubmitTask.Response())
        assert not response.accepted and 'idle.enabled is false' in response.error_msg
        assert not (tmp_path / 't.db').exists()
    finally:
        node.destroy_node()
