"""The agent node's parameters: what each one is, which may change while the Mind runs, how a
change is checked, and how it reaches the running Mind.

Read-only parameters shape what configure builds (the tool registry and its sandbox, the
prompt, the chooser, the task store): a new value would need a new Mind, so `ros2 param set`
refuses them; a cleanup and a configure read them again. Run-time parameters are values the
Mind reads afresh at each pass. A change is checked by the core's own rules (MindConfig,
DeliberationConfig) before it is accepted, then swapped in as whole frozen configs: a pass
under way sees the old value or the new one, never half of each, and no pass is waited for
(one may take minutes on the model).
"""

from dataclasses import replace

from rcl_interfaces.msg import SetParametersResult

from maxim_common.params import declare_table
from maxim_core.deliberation.choice import ChoiceConfig
from maxim_core.deliberation.cycles import DeliberationConfig
from maxim_core.mind import DEFAULT_ACTIVE, MindConfig
from maxim_core.nodes.params import (declare_idle, declare_string_array, read_idle,
                                     read_string_array)

GOAL_MAX_CHARS = 500     # a standing goal is a line of intent, not a document

# name: (default, description, range), declared read-only (maxim_common.params).
READ_ONLY = {
    'mode': ('passive', 'passive | active | singularity: the tools and their review', None),
    'simulation': (True, 'The robot lives in a simulation (said in the prompt)', None),
    'interactive': (False, 'A person talks to the robot (said in the prompt, which is '
                           'composed at configure; request_interaction is offered)', None),
    'workspace_root': ('.', 'Filesystem tools sandbox', None),
    'urdf': ('', "The head's URDF: the joint limits the move tool checks and describes "
             "('': maxim_bringup's urdf/maxim_head.urdf)", None),
    'tools.active': (list(DEFAULT_ACTIVE), 'Tools in scope', None),
    'tools.active_cap': (12, 'At most this many tools active', (1, 256)),
    'tools.index_path': ('', "Learned tool index file ('' = in memory only)", None),
    'tools.process': ('bwrap', 'Process tools run in: bwrap | python', None),
    'tools.network': (False, 'Process tools may reach the network', None),
    'deliberation.max_tokens': (DeliberationConfig().max_tokens, 'Tokens per answer (the '
                                'prompt budget is the context less this)', (16, 8192)),
    'deliberation.llm_timeout_s': (120.0, 'Bound on one LLM call (s)', (0.1, 3600.0)),
    'deliberation.use_grammar': (True, 'Decode under the lean GBNF', None),
    'deliberation.thought_drafts': (ChoiceConfig().thought_drafts, 'Drafts of a thought that '
                                    'only restates the diary (1: the first is kept)', (1, 16)),
    'deliberation.choice.weights': (ChoiceConfig().weights, 'Weights of the choice: fitted '
                                    '(weights.json, fitted on the decision benchmark) | hand',
                                    None),
    'deliberation.choice.weights_path': (
        '', "Another fitted weights file ('' = the shipped one)", None),
    'deliberation.decision': ('auto', 'choose | generate | auto', None),
    'enrichment.budget_s': (1.5, 'Bound on memory enrichment (s)', (0.0, 60.0)),
}
STRING_ARRAYS = {'tools.hidden': 'Paths the tool sandbox hides',
                 'systems.off': 'Bio-systems switched off (for ablations)'}

# name: (default, description, range), settable at run time (checked by `check`, applied by
# `apply`; the next pass reads the new value).
RUNTIME = {
    'goal': ('', 'The standing goal (at most 500 characters)', None),
    'percept_min_salience': (0.3, 'Vision percepts below this are not deliberated',
                             (0.0, 1.0)),
    'deliberation.max_cycles': (3, 'Cycles a pass may think', (1, 32)),
    # One temperature for the free text the mind writes, whichever way it decides: when it
    # chooses (the default), its thoughts and replies (ChoiceConfig.temperature); when it
    # generates, its answers (DeliberationConfig.temperature). The default is the choosing
    # path's own, so that path samples as it did before the parameter reached it.
    'deliberation.temperature': (ChoiceConfig().temperature, 'Sampling temperature of the '
                                 'free text the mind writes: its thoughts and replies when '
                                 'it chooses, its answers when it generates', (0.0, 2.0)),
    'deliberation.seed': (-1, 'Sampling seed (-1: a fresh one each call; n: the same prompt '
                              'samples the same tokens)', (-1, 2**31 - 1)),
    'deliberation.goal_max_cycles': (16, 'The most cycles a Deliberate goal may ask',
                                     (1, 64)),
    'energy.token_budget': (24000, 'Tokens of thinking (0: no bound, taken at configure '
                                   'only)', (0, 10**9)),
    'energy.refill_tokens_per_s': (150.0, 'Tokens the budget regains per second',
                                   (0.0, 10**6)),
}
# Run-time parameter -> (MindConfig field, DeliberationConfig field or None).
# deliberation.temperature also sets ChoiceConfig.temperature (`_CHOICE`).
_FIELDS = {'goal': ('goal', None), 'percept_min_salience': ('percept_min_salience', None),
           'deliberation.max_cycles': ('deliberation', 'max_cycles'),
           'deliberation.temperature': ('deliberation', 'temperature'),
           'deliberation.seed': ('deliberation', 'seed'),
           'energy.token_budget': ('energy_token_budget', None),
           'energy.refill_tokens_per_s': ('energy_refill_tokens_per_s', None)}
# Run-time parameter -> ChoiceConfig field: what the choosing path reads of it.
_CHOICE = {'deliberation.temperature': 'temperature'}


def declare(node) -> None:
    """Declare every parameter, each with its descriptor."""
    declare_table(node, READ_ONLY, read_only=True)
    for name, description in STRING_ARRAYS.items():
        declare_string_array(node, name, [], description, read_only=True)
    declare_idle(node)
    declare_table(node, RUNTIME)


def read_config(node, run_id: str) -> MindConfig:
    """The MindConfig of the parameters' values now; a bad value is a ValueError."""
    def v(name):
        return node.get_parameter(name).value

    config = MindConfig(
        mode=v('mode'), simulation=v('simulation'), interactive=v('interactive'),
        goal=v('goal'), workspace_root=v('workspace_root'),
        active_tools=tuple(v('tools.active')), active_cap=v('tools.active_cap'),
        tool_index_path=v('tools.index_path'), tool_process=v('tools.process'),
        tool_network=v('tools.network'), tool_hidden=tuple(read_string_array(
            node, 'tools.hidden')), percept_min_salience=v('percept_min_salience'),
        deliberation=DeliberationConfig(
            max_cycles=v('deliberation.max_cycles'), max_tokens=v('deliberation.max_tokens'),
            temperature=v('deliberation.temperature'), seed=v('deliberation.seed'),
            llm_timeout_s=v('deliberation.llm_timeout_s')),
        use_grammar=v('deliberation.use_grammar'),
        choice=ChoiceConfig(thought_drafts=v('deliberation.thought_drafts'),
                            temperature=v('deliberation.temperature'),
                            weights=v('deliberation.choice.weights'),
                            weights_path=v('deliberation.choice.weights_path')),
        decision=v('deliberation.decision'), enrichment_budget_s=v('enrichment.budget_s'),
        energy_token_budget=v('energy.token_budget'),
        energy_refill_tokens_per_s=v('energy.refill_tokens_per_s'),
        systems_off=frozenset(s for s in read_string_array(node, 'systems.off') if s),
        run_id=run_id)
    check_goal(config.goal)
    return replace(config, idle=read_idle(node, config.run_id))


def check_goal(goal: str) -> None:
    if len(goal) > GOAL_MAX_CHARS:
        raise ValueError(f'goal is {len(goal)} characters; at most {GOAL_MAX_CHARS}')
    if any(ord(c) < 32 and c not in '\t' for c in goal):
        raise ValueError('goal is one line of text (no control characters)')


def with_changes(config: MindConfig, changes: dict) -> MindConfig:
    """`config` with the run-time parameters in `changes` (others are ignored); the core's
    rules raise ValueError for a value they refuse."""
    top, inner, choice = {}, {}, {}
    for name, value in changes.items():
        if name in _FIELDS:
            field, sub = _FIELDS[name]
            (inner if sub else top)[sub or field] = value
        if name in _CHOICE:
            choice[_CHOICE[name]] = value
    if inner:
        top['deliberation'] = replace(config.deliberation, **inner)
    if choice:
        top['choice'] = replace(config.choice, **choice)
    return replace(config, **top) if top else config


def check(config: MindConfig, changes: dict, running: bool) -> SetParametersResult:
    """The answer to a parameter set of `changes` on `config`: refused with the reason when
    a value cannot be applied. The descriptors have checked types, ranges and read-only
    before this is asked; `running`: a Mind is built."""
    reason = _refusal(config, changes, running)
    return SetParametersResult(successful=not reason, reason=reason)


def _refusal(config: MindConfig, changes: dict, running: bool) -> str:
    try:
        if 'goal' in changes:
            check_goal(changes['goal'])
        with_changes(config, changes)
    except ValueError as exc:
        return str(exc)
    if running and config.energy_token_budget > 0 and changes.get('energy.token_budget') == 0:
        # EnergyBudget reads the budget, then divides by it: lifting the bound while a pass
        # asks for the fraction left could divide by zero.
        return ('energy.token_budget 0 (no bound) is taken at configure only; set a large '
                'budget instead')
    return ''


def apply(mind, old: MindConfig, new: MindConfig) -> None:
    """Swap the run-time values of `new` into the running `mind`, each as one attribute
    assignment (atomic for the threads that read it)."""
    e = mind.energy
    if (new.energy_token_budget, new.energy_refill_tokens_per_s) != \
            (old.energy_token_budget, old.energy_refill_tokens_per_s):
        e.remaining_fraction()             # settles the refill up to now at the old rate
        e.refill_tokens_per_s = float(new.energy_refill_tokens_per_s)
        e.token_budget = int(new.energy_token_budget)
    if new.deliberation != old.deliberation:
        mind.deliberator.config = new.deliberation
    chooser = mind.deliberator.chooser
    if new.choice != old.choice and chooser is not None:
        chooser.config = new.choice        # read afresh at each thought and reply
    if new.goal != old.goal:
        mind.goal = new.goal
    mind.config = new
