"""The cerebellum: motor programs learned from head goals, joint states and pain."""

from maxim_core.deliberation.enrichment import EnrichQuery
from maxim_core.mind import Cerebellum, HeadGoalCommand


class Clock:
    t = 0.0

    def __call__(self):
        return self.t


def goal(mode, pan=0.0, tilt=0.0, label=''):
    return HeadGoalCommand('g', 'test', mode, pan, tilt, target_label=label)


def test_a_move_that_reaches_its_goal_is_learned_with_its_time():
    clock = Clock()
    c = Cerebellum(clock=clock)
    c.joints(0.0, 0.0)
    key = c.command(goal(0, pan=0.5))
    assert key == 'move:left:some way'
    clock.t = 0.4
    c.joints(0.2, 0.0)                  # on its way
    clock.t = 0.8
    c.joints(0.49, 0.0)                 # there
    p = c.programs[key]
    assert (p.attempts, p.reached, p.hurt) == (1, 1, 0) and abs(p.reach_time_s - 0.8) < 1e-9


def test_a_move_to_the_limit_that_hurts_is_remembered_and_told_first():
    from maxim_common.urdf import read_head_limits
    clock = Clock()
    c = Cerebellum(limits=read_head_limits(), clock=clock)     # the URDF's
    c.joints(0.0, 0.0)
    key = c.command(goal(1, pan=-2.6))  # relative, to the right limit
    assert key.endswith(':limit')
    c.pain('joint_limit', 0.6, 'head_pan_joint')
    c.pain('tool_failure', 0.9)          # not a motor pain: ignored
    clock.t = 5.0
    c.joints(-2.0, 0.0)                  # never got there; the trial times out
    assert c.programs[key].hurt == 1 and c.programs[key].reached == 0
    c.command(goal(2, label='red ball'))
    clock.t = 6.5
    c.joints(-2.0, 0.0)                  # tracking held for a second
    text = c.provider(EnrichQuery('I look around', objects=['red ball'], tools=['move']))
    lines = text.splitlines()
    assert lines[0].startswith('moving the head right far up to a joint limit: reached 0 of 1,'
                               ' hurt 1 time') and lines[0].endswith('[it hurt before]')
    assert lines[1].startswith('following the red ball: reached 1 of 1')
    # Nothing about moving, nothing tracked in view, no head tool: nothing relevant.
    assert c.provider(EnrichQuery('a cup', objects=['cup'], tools=['respond'])) is None
