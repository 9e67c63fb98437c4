"""The robot world: the robot's head controller, camera model and attention on rendered
frames, and the robot-world scenarios run on the robot's own Mind, tools and body."""

import json
import math

import pytest

from maxim_core.mind.ports import HeadGoalCommand
from maxim_core.tools.robot import head_goal, MODE_MOVE, MODE_MOVE_RELATIVE, MODE_TRACK_TARGET
from maxim_eval.scenario.bridge import VirtualClock
from maxim_eval.scenario.scenario import (find_scenario, robot_scenarios, run_scenario, run_suite,
                                          Scenario)

from maxim_eval.robot_world import RobotWorld, urdf_head_config, WorldError, WORLDS

SETUP = {'head': {'pan': 0.0, 'tilt': 0.0},
         'objects': [{'name': 'red_ball', 'colour': 'red', 'pan': 0.3, 'tilt': 0.05},
                     {'name': 'blue_ball', 'colour': 'blue', 'pan': -1.2, 'tilt': 0.0}]}


def world(setup=SETUP):
    clock = VirtualClock()
    return RobotWorld(setup, clock=clock), clock


def run(w, clock, seconds):
    clock.sleep(seconds)
    w.advance(clock())


def goal(**kw):
    return HeadGoalCommand.from_dict(head_goal('test', **kw))


def test_the_head_has_the_urdf_limits():
    c = urdf_head_config()
    assert (c.pan_min, c.pan_max, c.tilt_min, c.tilt_max) == (-2.6, 2.6, -0.8, 0.8)
    assert c.max_velocity == 3.0


def test_attention_sees_what_is_in_the_field_of_view_and_says_it_as_the_robot_does():
    w, clock = world()
    run(w, clock, 0.5)
    view = w.view_percept()
    assert view.source == 'vision' and view.objects == ['red object']
    assert view.narrative.startswith('I see 1 object: a red object, to my left, new')
    assert w.view_percept() is None                      # nothing changed since
    # Turning right brings the blue ball in and takes the red one out of view.
    w.send_head_goal(goal(mode=MODE_MOVE, pan=-1.1))
    run(w, clock, 1.5)
    view = w.view_percept()
    assert view.objects == ['blue object'] and 'red' not in view.narrative
    assert abs(w.head_position()[0] + 1.1) < 0.02
    assert w.frames >= 19 and w.pop_pain() == []


def test_track_target_follows_the_label_attention_gives():
    w, clock = world()
    run(w, clock, 0.5)
    w.send_head_goal(goal(mode=MODE_TRACK_TARGET, target_label='red object'))
    run(w, clock, 2.0)
    pan, tilt = w.head_position()
    assert abs(pan - 0.3) < 0.03 and abs(tilt - 0.05) < 0.03
    assert w.check({'pointed_at': 'red_ball', 'min_fraction': 0.5}, 0.0)[0]
    met, why = w.check({'pointed_at': 'red_ball', 'min_fraction': 0.95}, 0.0)
    assert not met and 'need 95%' in why
    assert w.check({'moved': {'min_rad': 0.25}}, 0.0)[0]
    assert not w.check({'looked_at': 'blue_ball'}, 0.0)[0]


def test_a_move_past_the_limit_hurts_and_stops_at_the_limit():
    w, clock = world({'head': {'pan': 2.2}})
    w.send_head_goal(goal(mode=MODE_MOVE_RELATIVE, pan=1.0))
    run(w, clock, 1.0)
    [pain] = w.pop_pain()
    assert pain['type_name'] == 'joint_limit' and 0 < pain['intensity'] <= 1
    assert abs(w.head_position()[0] - 2.6) < 1e-6
    assert not w.check({'pain': 'joint_limit', 'max': 0}, 0.0)[0]
    assert w.check({'pain': 'joint_limit', 'max': 0}, clock())[0]
    # A span that ends before the pain does not count it.
    assert w.check({'pain': 'joint_limit', 'max': 0}, 0.0, until=pain['t'] - 1e-6)[0]


def test_world_events_and_bad_worlds():
    w, clock = world()
    assert w.event({'hide': 'red_ball', 'place': {'blue_ball': {'pan': 0.1}}}) == \
        'red_ball hidden; blue_ball placed at pan 0.10, tilt 0.00'
    run(w, clock, 0.5)
    assert w.view_percept().objects == ['blue object']
    with pytest.raises(WorldError, match='no object'):
        w.event({'show': 'dragon'})
    with pytest.raises(WorldError, match='colour must be one of'):
        RobotWorld({'objects': [{'name': 'x', 'colour': 'purple'}]}, clock=clock)
    with pytest.raises(WorldError, match='outside its joint limits'):
        RobotWorld({'head': {'pan': 3.0}}, clock=clock)
    with pytest.raises(WorldError, match='unknown body criterion'):
        w.check({'smiled': True}, 0.0)


def replay(name, **kw):
    clock = VirtualClock()
    return run_scenario(find_scenario(name), clock=clock, sleep=clock.sleep, worlds=WORLDS,
                        **kw)


def same(actions):
    """What must replay identically (a head goal's id is fresh each time)."""
    return [(a['turn'], a['tool'], a['args'], a['success'], a['blocked'], a['at_s'])
            for a in actions]


@pytest.mark.parametrize('name', sorted(robot_scenarios()))
def test_robot_scenario_passes_on_its_script(name):
    first, second = replay(name), replay(name)
    assert first.status == 'pass', first.summary()
    assert same(first.actions) == same(second.actions)
    assert first.recorded_script == find_scenario(name).script[:len(first.recorded_script)]
    assert first.finish['main']['closed']


def test_look_at_red_ball_is_judged_by_where_the_head_points():
    report = replay('look_at_red_ball')
    assert [a['tool'] for a in report.actions] == ['track_target']
    [body] = [m for m in report.criteria['met'] if m.startswith('body:')]
    assert 'pointed at red_ball' in body
    # The same run with a script that tracks the green block fails on the body criterion.
    scenario = find_scenario('look_at_red_ball')
    scenario.script[1] = scenario.script[1].replace('red object', 'green object')
    clock = VirtualClock()
    wrong = run_scenario(scenario, clock=clock, sleep=clock.sleep, worlds=WORLDS)
    assert wrong.status == 'fail'
    assert any(u.startswith('body: pointed at red_ball 0%') for u in wrong.criteria['unmet'])


def test_limit_pain_reaches_the_mind_and_is_not_repeated():
    report = replay('limit_pain')
    first, second = report.turns[0], report.turns[1]
    assert first['actions'][0]['tool'] == 'move'
    assert any('joint_limit pain' in t for t in first['thoughts']) or \
        any(a['tool'] == 'respond' for a in first['actions'])
    assert [a['tool'] for a in second['actions']] == ['move']
    assert report.criteria['passed'], report.summary()


def test_the_robot_suite_runs_with_the_text_worlds():
    suite = run_suite(worlds=WORLDS)
    names = [r['scenario'] for r in suite['runs']]
    assert set(robot_scenarios()) <= set(names) and 'locked_door' in names
    assert suite['failed'] == suite['errors'] == 0, json.dumps(suite['runs'], indent=1)


@pytest.mark.ros
def test_remember_name_goes_through_the_memory_node():
    from maxim_eval.scenario_memory import GraphMemory
    with GraphMemory() as graph:
        ports = []

        def memory(name):
            ports.append(graph.port(name))
            return ports[-1]

        report = replay('remember_name', memory=memory)
    assert report.status == 'pass', report.summary()
    [recall] = [a for a in report.actions if a['tool'] == 'memory_recall']
    assert 'Ada' in recall['output'] and recall['turn'] == 3
    assert ports[0].captured >= 3
    assert not math.isnan(report.duration_s)


def test_a_bad_world_event_is_a_stated_failure_not_a_turn():
    scenario = Scenario.from_dict({
        'name': 'bad_event', 'goal': 'watch', 'world': 'robot', 'setup': SETUP,
        'turns': [{'world': {'show': 'dragon'}}, {'world': {'wait_s': 0.5}}],
        'completion': {'body': [{'pain': 'any', 'max': 0, 'since_turn': 1}]},
        'script': [{'reasoning': 'A red object.', 'ready_to_act': False, 'action': None}]})
    clock = VirtualClock()
    report = run_scenario(scenario, clock=clock, sleep=clock.sleep, worlds=WORLDS)
    assert report.status == 'fail'
    assert report.reasons[0].startswith("world event failed: no object 'dragon'")
    assert [t['message'] for t in report.turns] == ['0.5 s pass']
    assert report.criteria['met'] == ['body: 0 any pain(s) (at most 0)']
