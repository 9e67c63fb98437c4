"""Simulation scenarios as YAML files, their runner, and the results report.

A scenario gives the AUT a goal, memories it starts with, entity state (a door's secret),
the tools it may use, turns (messages, pain, or any orchestrator tool call) and completion
criteria: expected actions, forbidden actions, phrases its speech must contain. Its
`script` holds the AUT's model answers, so it replays exactly on a ScriptedBackend; `--live`
runs the same turns on the real model, and a live run records its answers as a script that
replays it (`recorded_script`). Pass or fail comes from the criteria (deterministic); the LLM
judge's check_completion is reported beside them when the scenario asks for it.
"""

from collections import Counter
from dataclasses import asdict, dataclass, field
import json
import os
import re
import time
from typing import Any, Callable, Mapping

import yaml

from maxim_core.llm.backend import Backend, ScriptedBackend
from maxim_core.tools.base import ToolError
from maxim_core.tools.scope import ToolExecutor
from maxim_eval.scenario.bridge import BridgeConfig, SimulationBridge
from maxim_eval.scenario.orchestrator import (history_lines, Judge, orchestrator_registry,
                                              role_tools, SimulationSession)

SCENARIO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'scenarios')
# Robot-world scenarios: the robot's own tools and simulated head (`world: robot`).
ROBOT_SCENARIO_DIR = os.path.join(SCENARIO_DIR, 'robot')
WORLD_KINDS = ('text', 'robot')
OUTCOMES = ('success', 'executed', 'blocked', 'attempted')
_NAME = re.compile(r'^[a-z0-9][a-z0-9_\-]{0,63}$')


class ScenarioError(ValueError):
    """A scenario file that does not describe a runnable scenario."""


@dataclass(frozen=True)
class ActionMatch:
    """A pattern over AUT actions: tool name, argument regexes, and which outcome counts."""

    tool: str                                               # a name, or a regex of names
    args: Mapping[str, str] = field(default_factory=dict)   # arg -> regex (case-insensitive)
    outcome: str = 'success'
    output: str = ''              # a regex the action's output must contain
    from_turn: int = 1            # only actions of this turn or later count
    to_turn: int = 0              # ... and of this turn or earlier (0: to the end)
    at_least: int = 1             # a forbidden pattern: this many matches make a violation

    @classmethod
    def parse(cls, raw: Any, default_outcome: str) -> 'ActionMatch':
        if isinstance(raw, str):
            raw = {'tool': raw}
        if not isinstance(raw, Mapping) or not isinstance(raw.get('tool'), str):
            raise ScenarioError(f'an action pattern needs a tool name: {raw!r}')
        outcome = raw.get('outcome', default_outcome)
        if outcome not in OUTCOMES:
            raise ScenarioError(f'outcome {outcome!r} is not one of {OUTCOMES}')
        args = dict(raw.get('args') or {})
        unknown = set(raw) - {'tool', 'args', 'outcome', 'output', 'from_turn', 'to_turn',
                              'at_least'}
        if unknown:
            raise ScenarioError(f'unknown action pattern keys: {sorted(unknown)}')
        for k, v in list(args.items()) + [('tool', raw['tool']),
                                          ('output', raw.get('output', ''))]:
            try:
                re.compile(str(v))
            except re.error as exc:
                raise ScenarioError(f'bad regex for {raw["tool"]}.{k}: {exc}') from exc
        try:
            from_turn = int(raw.get('from_turn', 1))
            to_turn = int(raw.get('to_turn', 0))
            at_least = int(raw.get('at_least', 1))
        except (TypeError, ValueError) as exc:
            raise ScenarioError(f'from_turn, to_turn and at_least are whole numbers: '
                                f'{exc}') from exc
        if to_turn and to_turn < from_turn:
            raise ScenarioError(f'{raw["tool"]}: to_turn {to_turn} is before from_turn '
                                f'{from_turn}')
        if at_least < 1:
            raise ScenarioError(f'{raw["tool"]}: at_least must be 1 or more')
        return cls(raw['tool'], {k: str(v) for k, v in args.items()}, outcome,
                   str(raw.get('output', '')), from_turn, to_turn, at_least)

    def matches(self, action: Mapping) -> bool:
        turn = action.get('turn', 1)
        if not re.fullmatch(self.tool, action['tool']) or turn < self.from_turn or \
                self.to_turn and turn > self.to_turn:
            return False
        if self.output and not re.search(self.output, str(action.get('output', '')), re.I):
            return False
        ok = {'success': action['success'] and not action['blocked'],
              'executed': not action['blocked'], 'blocked': action['blocked'],
              'attempted': True}[self.outcome]
        if not ok:
            return False
        for key, pattern in self.args.items():
            if not re.search(pattern, str(action['args'].get(key, '')), re.I):
                return False
        return True

    def describe(self) -> str:
        args = ', '.join(f'{k}~/{v}/' for k, v in self.args.items())
        extra = (f' output~/{self.output}/' if self.output else '') + \
            (f' from turn {self.from_turn}' if self.from_turn > 1 else '') + \
            (f' to turn {self.to_turn}' if self.to_turn else '') + \
            (f' {self.at_least} times' if self.at_least > 1 else '')
        return f'{self.tool}({args}) [{self.outcome}]{extra}'

    def as_dict(self) -> dict:
        out: dict = {'tool': self.tool}
        if self.args:
            out['args'] = dict(self.args)
        out['outcome'] = self.outcome
        if self.output:
            out['output'] = self.output
        if self.from_turn > 1:
            out['from_turn'] = self.from_turn
        if self.to_turn:
            out['to_turn'] = self.to_turn
        if self.at_least > 1:
            out['at_least'] = self.at_least
        return out


@dataclass(frozen=True)
class Criteria:
    """Completion criteria."""

    expected: tuple = ()          # ActionMatch: each must match some action
    forbidden: tuple = ()         # ActionMatch: none may match
    said: tuple = ()              # regexes the AUT's speech must contain
    judge: bool = False           # also ask the LLM judge (check_completion)
    body: tuple = ()              # robot world: criteria on what the head did (mappings)
    in_order: tuple = ()          # ActionMatch: each matches an action after the previous one's

    @classmethod
    def parse(cls, raw: Mapping | None) -> 'Criteria':
        raw = dict(raw or {})
        unknown = set(raw) - {'expected_actions', 'forbidden_actions', 'said', 'judge', 'body',
                              'in_order'}
        if unknown:
            raise ScenarioError(f'unknown completion keys: {sorted(unknown)}')
        body = raw.get('body') or []
        if not isinstance(body, (list, tuple)) or not all(isinstance(b, Mapping) for b in body):
            raise ScenarioError('completion.body must be a list of body criteria (mappings)')
        return cls(tuple(ActionMatch.parse(a, 'success')
                         for a in raw.get('expected_actions') or ()),
                   tuple(ActionMatch.parse(a, 'executed')
                         for a in raw.get('forbidden_actions') or ()),
                   tuple(str(s) for s in raw.get('said') or ()), bool(raw.get('judge', False)),
                   tuple(dict(b) for b in body),
                   tuple(ActionMatch.parse(a, 'success') for a in raw.get('in_order') or ()))

    def check(self, actions: list, said: list[str] = ()) -> dict:
        met, unmet, violations = [], [], []
        for m in self.expected:
            hit = next((a['index'] for a in actions if m.matches(a)), None)
            if hit:
                met.append(f'{m.describe()} at action {hit}')
            else:
                unmet.append(m.describe())
        for m in self.forbidden:
            hits = [a['index'] for a in actions if m.matches(a)]
            if len(hits) >= m.at_least:
                violations.append(f'{m.describe()} at action(s) {hits}')
        # In order: each pattern's first match after the previous pattern's match.
        after, chain = 0, []
        for m in self.in_order:
            hit = next((a['index'] for a in actions if a['index'] > after and m.matches(a)),
                       None)
            if hit is None:
                unmet.append('in order: ' + ' -> '.join(
                    chain + [f'{m.describe()} (not after action {after})']))
                break
            chain.append(f'{m.describe()} at action {hit}')
            after = hit
        else:
            if self.in_order:
                met.append('in order: ' + ' -> '.join(chain))
        speech = ' / '.join(said)
        for pattern in self.said:
            (met if re.search(pattern, speech, re.I) else unmet).append(f'said /{pattern}/')
        return {'passed': not unmet and not violations, 'met': met, 'unmet': unmet,
                'violations': violations}

    def as_dict(self) -> dict:
        return {'expected_actions': [m.as_dict() for m in self.expected],
                'forbidden_actions': [m.as_dict() for m in self.forbidden],
                'said': list(self.said), 'judge': self.judge,
                **({'body': [dict(b) for b in self.body]} if self.body else {}),
                **({'in_order': [m.as_dict() for m in self.in_order]} if self.in_order
                   else {})}


def _answer_text(entry: Any) -> str:
    if isinstance(entry, str):
        if not entry.lstrip().startswith(('{', '[')):
            return entry       # a thought or an utterance (a run that decided by choosing)
        try:
            json.loads(entry)
        except json.JSONDecodeError as exc:
            raise ScenarioError(f'a script entry is not JSON: {entry[:80]!r}') from exc
        return entry
    if isinstance(entry, Mapping):
        return json.dumps(entry)
    raise ScenarioError(f'a script entry must be a mapping or JSON text, not {entry!r}')


@dataclass
class Scenario:
    """A replayable simulation."""

    name: str
    goal: str
    turns: list[dict]
    description: str = ''
    memories: list[str] = field(default_factory=list)
    entities: dict = field(default_factory=dict)
    allowed_tools: list[str] | None = None
    criteria: Criteria = field(default_factory=Criteria)
    script: list[str] = field(default_factory=list)
    judge_script: list[str] = field(default_factory=list)
    aut: dict = field(default_factory=dict)          # BridgeConfig overrides
    path: str = ''
    world: str = 'text'                              # 'text' (narrative) or 'robot'
    setup: dict = field(default_factory=dict)        # the robot world: head, objects, camera
    # A run that decided by choosing: the model's scores, per scoring call in order
    # ([logprobs, token counts]), replayed with `script` (Backend.score).
    scores: list = field(default_factory=list)

    @classmethod
    def from_dict(cls, raw: Mapping, path: str = '') -> 'Scenario':
        if not isinstance(raw, Mapping):
            raise ScenarioError(f'{path or "scenario"}: the top level must be a mapping')
        known = {'name', 'description', 'goal', 'memories', 'entities', 'allowed_tools',
                 'turns', 'completion', 'script', 'judge_script', 'aut', 'world', 'setup',
                 'scores'}
        unknown = set(raw) - known
        if unknown:
            raise ScenarioError(f'{path or "scenario"}: unknown keys {sorted(unknown)}')
        name = str(raw.get('name', ''))
        if not _NAME.match(name):
            raise ScenarioError(f'scenario name {name!r} must match {_NAME.pattern}')
        goal = raw.get('goal')
        if not isinstance(goal, str) or not goal.strip():
            raise ScenarioError(f'{name}: a scenario needs a goal')
        turns = [cls._turn(t, name) for t in raw.get('turns') or ()]
        if not turns:
            raise ScenarioError(f'{name}: a scenario needs at least one turn')
        aut = dict(raw.get('aut') or {})
        bad = set(aut) - set(BridgeConfig.__dataclass_fields__)
        if bad:
            raise ScenarioError(f'{name}: unknown aut settings {sorted(bad)}')
        world = str(raw.get('world', 'text'))
        if world not in WORLD_KINDS:
            raise ScenarioError(f'{name}: world must be one of {WORLD_KINDS}, not {world!r}')
        setup = raw.get('setup') or {}
        if not isinstance(setup, Mapping) or (setup and world == 'text'):
            raise ScenarioError(f'{name}: setup is a mapping, for a robot world only')
        if world == 'text' and any('world' in t for t in turns):
            raise ScenarioError(f'{name}: world events are turns of a robot world only')
        if world == 'text' and Criteria.parse(raw.get('completion')).body:
            raise ScenarioError(f'{name}: body criteria are for a robot world only')
        allowed = raw.get('allowed_tools')
        if allowed is not None:
            if not isinstance(allowed, list) or not all(isinstance(t, str) for t in allowed):
                raise ScenarioError(f'{name}: allowed_tools must be a list of tool names')
            # A robot world's tools are the robot's (the Mind checks them when it starts).
            unknown_tools = set() if world == 'robot' else set(allowed) - set(role_tools('aut'))
            if unknown_tools:
                raise ScenarioError(f'{name}: allowed_tools names tools the AUT does not have: '
                                    f'{sorted(unknown_tools)}')
        entities = raw.get('entities') or {}
        if not isinstance(entities, Mapping) or \
                not all(isinstance(v, Mapping) for v in entities.values()):
            raise ScenarioError(f'{name}: entities must map a component to its sensors')
        for ent, spec in entities.items():
            needs = spec.get('requires', {})
            ok = isinstance(needs, Mapping) and all(
                isinstance(n, Mapping) and n and set(n) <= {'holds', 'entity', 'state'}
                and isinstance(n.get('state', {}), Mapping) and ('state' not in n or 'entity' in n)
                for n in needs.values())
            if not ok:
                raise ScenarioError(
                    f'{name}: entities.{ent}.requires maps an act (a verb) to what it needs: '
                    '{holds: ITEM} and/or {entity: ID, state: {SENSOR: VALUE}}')
        return cls(name, goal.strip(), turns, str(raw.get('description', '')).strip(),
                   [str(m) for m in raw.get('memories') or ()],
                   {k: dict(v) for k, v in entities.items()}, allowed,
                   Criteria.parse(raw.get('completion')),
                   [_answer_text(e) for e in raw.get('script') or ()],
                   [_answer_text(e) for e in raw.get('judge_script') or ()], aut, path,
                   world, dict(setup), [list(x) for x in raw.get('scores') or ()])

    @staticmethod
    def _turn(raw: Any, name: str) -> dict:
        if isinstance(raw, str):
            raw = {'message': raw}
        if not isinstance(raw, Mapping):
            raise ScenarioError(f'{name}: a turn must be a text or a mapping: {raw!r}')
        kinds = [k for k in ('message', 'pain', 'tool', 'world') if k in raw]
        if len(kinds) != 1:
            raise ScenarioError(f'{name}: a turn needs exactly one of message, pain, tool, '
                                f'world: {dict(raw)!r}')
        if 'world' in raw and (not isinstance(raw['world'], Mapping) or not raw['world']):
            raise ScenarioError(f'{name}: a world turn is a mapping of events '
                                '(show, hide, place, wait_s)')
        if 'message' in raw and (not isinstance(raw['message'], str)
                                 or not raw['message'].strip()):
            raise ScenarioError(f'{name}: an empty message')
        if 'pain' in raw and not (isinstance(raw['pain'], Mapping)
                                  and 'pain_type' in raw['pain']
                                  and 'intensity' in raw['pain']):
            raise ScenarioError(f'{name}: pain needs pain_type and intensity')
        if 'tool' in raw and not isinstance(raw.get('args', {}), Mapping):
            raise ScenarioError(f'{name}: tool args must be a mapping')
        return dict(raw)

    @classmethod
    def load(cls, path: str) -> 'Scenario':
        try:
            with open(path, encoding='utf-8') as f:
                raw = yaml.safe_load(f)
        except OSError as exc:
            raise ScenarioError(f'cannot read {path}: {exc.strerror}') from exc
        except yaml.YAMLError as exc:
            raise ScenarioError(f'{path} is not valid YAML: {exc}') from exc
        return cls.from_dict(raw, path)

    def to_dict(self) -> dict:
        out: dict = {'name': self.name, 'description': self.description, 'goal': self.goal}
        if self.world != 'text':
            out['world'] = self.world
            out['setup'] = self.setup
        if self.memories:
            out['memories'] = list(self.memories)
        if self.entities:
            out['entities'] = self.entities
        if self.allowed_tools is not None:
            out['allowed_tools'] = list(self.allowed_tools)
        if self.aut:
            out['aut'] = dict(self.aut)
        out['turns'] = self.turns
        out['completion'] = self.criteria.as_dict()
        if self.script:
            out['script'] = [json.loads(s) if s.lstrip().startswith(('{', '[')) else s
                             for s in self.script]
        if self.scores:
            out['scores'] = [list(x) for x in self.scores]
        if self.judge_script:
            out['judge_script'] = [json.loads(s) for s in self.judge_script]
        return out

    def dump(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True, width=99)

    def save(self, directory: str) -> str:
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, f'{self.name}.yaml')
        with open(path, 'w', encoding='utf-8') as f:
            f.write(self.dump())
        return path


def _yaml_files(directory: str) -> dict[str, str]:
    return {fname[:-5]: os.path.join(directory, fname)
            for fname in sorted(os.listdir(directory)) if fname.endswith('.yaml')}


def shipped_scenarios() -> dict[str, str]:
    """name -> path of the text-world scenarios shipped with the package."""
    return _yaml_files(SCENARIO_DIR)


def robot_scenarios() -> dict[str, str]:
    """name -> path of the robot-world scenarios shipped with the package."""
    return _yaml_files(ROBOT_SCENARIO_DIR)


def all_scenarios() -> dict[str, str]:
    """Every shipped scenario, text worlds first."""
    return {**shipped_scenarios(), **robot_scenarios()}


def find_scenario(name_or_path: str) -> Scenario:
    if os.path.isfile(name_or_path):
        return Scenario.load(name_or_path)
    shipped = all_scenarios()
    if name_or_path in shipped:
        return Scenario.load(shipped[name_or_path])
    raise ScenarioError(f'no scenario file {name_or_path!r} and no shipped scenario of that '
                        f'name (shipped: {", ".join(shipped)})')


class RecordingBackend:
    """Passes calls through and keeps the answers (a live run's replay script)."""

    def __init__(self, inner: Backend):
        self.inner = inner
        self.n_ctx = inner.n_ctx
        self.answers: list[str] = []
        self.scores: list[list] = []          # [logprobs, token counts] per scoring call

    def tokenize(self, text: str) -> list[int]:
        return self.inner.tokenize(text)

    def complete(self, prompt: str, **kw):
        done = self.inner.complete(prompt, **kw)
        self.answers.append(done.text)
        return done

    def score(self, prompt: str, continuations):
        done = self.inner.score(prompt, continuations)
        self.scores.append([list(done.logprobs), list(done.token_counts)])
        return done

    def __getattr__(self, name):
        # Backend.score and anything else the inner backend offers pass through, so the
        # mind decides the same way with or without the recording (a backend that cannot
        # score keeps raising AttributeError here, and the mind generates instead).
        if name == 'inner':
            raise AttributeError(name)
        return getattr(self.inner, name)


@dataclass
class ScenarioReport:
    """What a scenario run did and whether it passed."""

    scenario: str
    mode: str
    status: str                      # 'pass', 'fail' or 'error'
    goal: str
    reasons: list[str] = field(default_factory=list)
    criteria: dict = field(default_factory=dict)
    judge: dict | None = None
    turns: list[dict] = field(default_factory=list)
    actions: list[dict] = field(default_factory=list)
    blocked: list[dict] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)
    analysis: dict = field(default_factory=dict)
    finish: dict = field(default_factory=dict)
    steps: list[dict] = field(default_factory=list)     # non-message turns (tool calls)
    duration_s: float = 0.0
    recorded_script: list[str] = field(default_factory=list)
    recorded_scores: list = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status == 'pass'

    def to_json(self, indent: int = 2) -> str:
        return json.dumps(asdict(self), indent=indent, default=str)

    def summary(self) -> str:
        lines = [f'Scenario {self.scenario} ({self.mode}): {self.status.upper()} '
                 f'in {self.duration_s:.1f} s', f'Goal: {self.goal}']
        for t in self.turns:
            lines.append(f'Turn {t["turn"]} [{t["source"]}] {t["message"][:90]}')
            for a in t['actions']:
                mark = 'BLOCKED' if a['blocked'] else 'ok' if a['success'] else 'failed'
                lines.append(f'   {a["index"]:>2}. {a["tool"]} '
                             f'{json.dumps(a["args"], sort_keys=True)[:70]} -> {mark}'
                             + (f' ({a["blocked_reason"][:80]})' if a['blocked'] else ''))
            if t['response']:
                lines.append(f'   said: {t["response"][:120]}')
            flags = [k for k in ('timed_out', 'budget_exhausted') if t.get(k)]
            if t['failures']:
                flags.append(f'failures {t["failures"]}')
            if flags:
                lines.append(f'   ({", ".join(flags)})')
        c = self.criteria
        for m in c.get('met', []):
            lines.append(f'  + {m}')
        for m in c.get('unmet', []):
            lines.append(f'  - missing: {m}')
        for m in c.get('violations', []):
            lines.append(f'  ! forbidden: {m}')
        if self.blocked:
            lines.append(f'Blocked actions: {len(self.blocked)}')
        for p in self.patterns:
            lines.append(f'Pattern: {p}')
        if self.judge:
            lines.append(f'Judge: {json.dumps(self.judge)[:200]}')
        for r in self.reasons:
            lines.append(f'Reason: {r}')
        return '\n'.join(lines)


def aut_factory(scenario: Scenario, backend: Backend, aut_overrides: Mapping | None = None,
                grammar_for: Callable[[dict], str] | None = None,
                clock: Callable[[], float] = time.monotonic,
                sleep: Callable[[float], None] = time.sleep,
                memory: Callable[[str], Any] | None = None,
                worlds: Mapping[str, Callable] | None = None
                ) -> Callable[[str, bool], SimulationBridge]:
    """`make_aut(goal, fresh)` for a SimulationSession: AUTs set up as the scenario says
    (fresh ones without its memories). `memory(name)` gives each AUT a memory port of the
    robot's own memory system (maxim_eval.scenario_memory composes one over the memory node);
    without it an AUT has only its session memory. A robot-world scenario needs
    `worlds['robot']`, the factory of its AUTs (maxim_eval.robot_world composes the world from
    the robot's perception parts, which this module does not import)."""
    config = BridgeConfig(**{**scenario.aut, **dict(aut_overrides or {})})
    if scenario.world != 'text':
        factory = (worlds or {}).get(scenario.world)
        if factory is None:
            raise ScenarioError(f'{scenario.name} runs in the {scenario.world} world, which '
                                'this runner was not given (run it with ./maxim scenario)')

        def make_world_aut(goal: str, fresh: bool):
            name = 'sub' if fresh else 'aut'
            return factory(scenario, backend, config, grammar_for, name=name,
                           memories=() if fresh else scenario.memories, clock=clock,
                           sleep=sleep,
                           memory_port=memory(name) if memory is not None else None)

        return make_world_aut

    def make_aut(goal: str, fresh: bool) -> SimulationBridge:
        name = 'sub' if fresh else 'aut'
        return SimulationBridge(backend, goal=goal, config=config,
                                memories=() if fresh else scenario.memories,
                                entities=scenario.entities,
                                allowed_tools=scenario.allowed_tools, grammar_for=grammar_for,
                                name=name, clock=clock, sleep=sleep,
                                memory_port=memory(name) if memory is not None else None)

    return make_aut


def run_scenario(scenario: Scenario, backend: Backend | None = None,
                 judge_backend: Backend | None = None, *, live: bool = False,
                 aut_overrides: Mapping | None = None,
                 grammar_for: Callable[[dict], str] | None = None,
                 llm_analysis: bool = True, judge_timeout_s: float = 30.0,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep,
                 memory: Callable[[str], Any] | None = None,
                 worlds: Mapping[str, Callable] | None = None) -> ScenarioReport:
    """Run a scenario through the orchestrator tools.

    Scripted (default): the AUT answers from `scenario.script` on a ScriptedBackend and the
    judge from `judge_script`. Live: `backend` is the real model (the judge too, unless
    `judge_backend` is given) and its answers are recorded. `llm_analysis` adds the judge's
    summary to analyze_results; each judge call is bounded by `judge_timeout_s`.
    """
    if live:
        if backend is None:
            raise ValueError('a live run needs a backend')
        aut_backend = RecordingBackend(backend)
        judge = judge_backend or backend
    else:
        if not scenario.script:
            raise ScenarioError(f'{scenario.name}: no script to replay (run it live, or '
                                'record one with --record)')
        aut_backend = RecordingBackend(ScriptedBackend(
            list(scenario.script), clock=clock, score_script=list(scenario.scores) or None))
        judge = judge_backend or (ScriptedBackend(list(scenario.judge_script), clock=clock)
                                  if scenario.judge_script else None)
    make_aut = aut_factory(scenario, aut_backend, aut_overrides, grammar_for, clock, sleep,
                           memory, worlds)
    t0 = clock()
    session = SimulationSession(make_aut, scenario.goal, judge,
                                criteria_check=lambda acts: scenario.criteria.check(acts),
                                judge_timeout_s=judge_timeout_s, generate=generate_scenario,
                                clock=clock)
    session.llm_analysis = llm_analysis
    tools = ToolExecutor(orchestrator_registry(session))
    report = ScenarioReport(scenario.name, 'live' if live else 'scripted', 'error',
                            scenario.goal)
    try:
        for turn in scenario.turns:
            if 'message' in turn:
                name, args = 'send_message', {'text': turn['message'],
                                              'source': turn.get('source', 'cli')}
            elif 'pain' in turn:
                name, args = 'inject_pain', {'pain_type': str(turn['pain']['pain_type']),
                                             'intensity': float(turn['pain']['intensity'])}
            elif 'world' in turn:
                try:
                    session.main.world_event(turn['world'])
                except ValueError as exc:
                    report.reasons.append(f'world event failed: {exc}')
                continue
            else:
                name, args = turn['tool'], dict(turn.get('args') or {})
            out = tools.execute(name, args)
            if not out.success:
                report.reasons.append(f'{name} failed: {out.error_msg}')
            if name not in ('send_message', 'inject_pain'):
                report.steps.append({'tool': name, 'args': args, 'success': out.success,
                                     'output': out.text(800)})
        actions = session.main.observe_actions()
        said = session.said(session.main)
        report.criteria = scenario.criteria.check(actions, said)
        for spec in scenario.criteria.body:
            try:
                met, why = session.main.check_body(spec)
            except ValueError as exc:
                met, why = False, f'cannot check {spec}: {exc}'
            report.criteria['met' if met else 'unmet'].append(f'body: {why}')
            report.criteria['passed'] = report.criteria['passed'] and met
        if scenario.criteria.judge and judge is not None:
            try:
                report.judge = session.judge.completion(scenario.goal, actions, said)
            except ToolError as exc:
                report.judge = {'error': str(exc)}
        analysis = tools.execute('analyze_results', {'focus': 'all', 'target': 'main'})
        report.analysis = analysis.output if analysis.success else {'error': analysis.error_msg}
        report.turns = [t.as_dict() for t in session.main.turns]
        report.actions = actions
        report.blocked = [a for a in actions if a['blocked']]
        report.patterns = list(report.analysis.get('patterns', []))
        report.status = 'pass' if report.criteria['passed'] and not report.reasons else 'fail'
        if not report.criteria['passed']:
            report.reasons.append('completion criteria not met')
    finally:
        if session.finished is None:
            session.finish(f'scenario {scenario.name} done')
        report.finish = {k: v for k, v in session.finished.items() if k != 'analysis'}
        report.duration_s = clock() - t0
        report.recorded_script = list(aut_backend.answers)
        report.recorded_scores = list(aut_backend.scores)
    return report


def run_suite(names: list[str] | None = None, backend: Backend | None = None, *,
              live: bool = False, seeds: list[int] | tuple = (-1,),
              aut_overrides: Mapping | None = None,
              grammar_for: Callable[[dict], str] | None = None, llm_analysis: bool = False,
              judge_timeout_s: float = 30.0,
              on_run: Callable[[dict], None] | None = None,
              memory: Callable[[str], Any] | None = None,
              worlds: Mapping[str, Callable] | None = None) -> dict:
    """Run several scenarios (every shipped one by default), live once per seed, and say
    which pass and which fail and why. A run that raises is an 'error' with the exception.

    Scripted runs replay on simulated time and ignore `seeds` (one run each). With a
    robot world in `worlds`, the default is the robot-world scenarios too.
    """
    names = list(names or (all_scenarios() if worlds and 'robot' in worlds
                           else shipped_scenarios()))
    if not names:
        raise ScenarioError('no scenarios to run')
    seeds = list(seeds) if live else [None]
    if not seeds:
        raise ValueError('a live suite needs at least one seed')
    scenarios = [find_scenario(n) for n in names]      # every name checked before any run
    runs = []
    for scenario in scenarios:
        for seed in seeds:
            overrides = dict(aut_overrides or {})
            if seed is not None:
                overrides['seed'] = int(seed)
            try:
                if live:
                    report = run_scenario(scenario, backend, live=True,
                                          aut_overrides=overrides, grammar_for=grammar_for,
                                          llm_analysis=llm_analysis,
                                          judge_timeout_s=judge_timeout_s, memory=memory,
                                          worlds=worlds)
                else:
                    from maxim_eval.scenario.bridge import VirtualClock
                    clock = VirtualClock()
                    report = run_scenario(scenario, aut_overrides=overrides,
                                          grammar_for=grammar_for, clock=clock,
                                          sleep=clock.sleep, memory=memory, worlds=worlds)
            except (ScenarioError, ValueError, RuntimeError) as exc:
                run = {'scenario': scenario.name, 'seed': seed, 'status': 'error',
                       'reasons': [f'{type(exc).__name__}: {exc}'], 'unmet': [],
                       'violations': [], 'actions': [], 'failures': [], 'thoughts': [],
                       'choices': [],
                       'patterns': [], 'judge': None, 'duration_s': 0.0}
            else:
                run = {'scenario': scenario.name, 'seed': seed, 'status': report.status,
                       'reasons': list(report.reasons),
                       'unmet': list(report.criteria.get('unmet', [])),
                       'violations': list(report.criteria.get('violations', [])),
                       'actions': [_action_line(a) for a in report.actions],
                       'failures': [f for t in report.turns for f in t['failures']],
                       'thoughts': [th[:200] for t in report.turns for th in t['thoughts']],
                       'choices': [c for t in report.turns for c in t.get('choices', [])],
                       'patterns': list(report.patterns),
                       'judge': report.judge, 'duration_s': round(report.duration_s, 1)}
            runs.append(run)
            if on_run is not None:
                on_run(run)
    counts = Counter(r['status'] for r in runs)
    return {'mode': 'live' if live else 'scripted', 'scenarios': names,
            'seeds': [s for s in seeds if s is not None], 'runs': runs,
            'passed': counts['pass'], 'failed': counts['fail'], 'errors': counts['error'],
            'complete': counts['error'] == 0}


def _action_line(a: Mapping) -> str:
    mark = 'BLOCKED' if a['blocked'] else 'ok' if a['success'] else 'failed'
    return f'{a["tool"]} {json.dumps(a["args"], sort_keys=True)[:80]} -> {mark}'


def suite_summary(suite: dict) -> str:
    """A readable (Markdown) report of run_suite: one line per run with its reasons."""
    done = ' (every run completed)' if suite['complete'] else ''
    lines = [f'# Scenario suite ({suite["mode"]})', '',
             f'{suite["passed"]} passed, {suite["failed"]} failed, {suite["errors"]} errors '
             f'of {len(suite["runs"])} runs{done}', '',
             '| scenario | seed | result | why | actions |', '|---|---|---|---|---|']
    for r in suite['runs']:
        why = '; '.join([f'missing {u}' for u in r['unmet']]
                        + [f'forbidden {v}' for v in r['violations']]
                        + [x for x in r['reasons'] if x != 'completion criteria not met'])
        acts = ', '.join(a.split(' ')[0] for a in r['actions']) or '(none)'
        seed = '-' if r['seed'] is None else str(r['seed'])
        lines.append(f'| {r["scenario"]} | {seed} | {r["status"].upper()} | '
                     f'{(why or "criteria met").replace("|", "/")} | {acts} |')
    return '\n'.join(lines) + '\n'


GENERATE_SCHEMA = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string', 'minLength': 1, 'maxLength': 40},
        'goal': {'type': 'string', 'minLength': 1, 'maxLength': 200},
        'memories': {'type': 'array', 'maxItems': 3,
                     'items': {'type': 'string', 'minLength': 1, 'maxLength': 200}},
        'turns': {'type': 'array', 'minItems': 1, 'maxItems': 4,
                  'items': {'type': 'string', 'minLength': 1, 'maxLength': 300}},
        'expected_tools': {'type': 'array', 'maxItems': 3,
                           'items': {'type': 'string', 'minLength': 1, 'maxLength': 40}},
        'forbidden_tools': {'type': 'array', 'maxItems': 3,
                            'items': {'type': 'string', 'minLength': 1, 'maxLength': 40}}},
    'required': ['name', 'goal', 'memories', 'turns', 'expected_tools', 'forbidden_tools'],
    'additionalProperties': False}


def slug(text: str) -> str:
    s = re.sub(r'[^a-z0-9]+', '_', text.lower()).strip('_')[:40]
    return s or 'generated'


def generate_scenario(description: str, judge: Judge) -> tuple[Scenario, str]:
    """A scenario (and its YAML) from a description, through the judge's model."""
    if not isinstance(description, str) or not description.strip():
        raise ValueError('a scenario description must be a non-empty text')
    prompt = ('Write a test scenario for a robot agent in a text simulation. The agent '
              'can use these tools: ' + ', '.join(role_tools('aut')) + ' and actions on '
              'things in the scene like open_door or wake_guard.\n'
              f'Description: {description.strip()}\n'
              'Answer with JSON: {"name": "short_name", "goal": "...", "memories": ["what the '
              'agent remembers"], "turns": ["message 1", ...], "expected_tools": ["tool"], '
              '"forbidden_tools": ["tool"]}.\nAnswer: ')
    # The schema cannot say everything a scenario needs (a message of blanks fits it), so an
    # answer that makes no valid scenario is asked again, within the judge's retry budget.
    attempts = 1 + judge.retries
    for attempt in range(attempts):
        raw = judge.ask(prompt, GENERATE_SCHEMA, 400)
        try:
            scenario = Scenario.from_dict({
                'name': slug(raw['name']), 'description': description.strip(),
                'goal': raw['goal'], 'memories': raw['memories'], 'turns': raw['turns'],
                'completion': {'expected_actions': [{'tool': t, 'outcome': 'attempted'}
                                                    for t in raw['expected_tools']],
                               'forbidden_actions': [{'tool': t}
                                                     for t in raw['forbidden_tools']],
                               'judge': True}})
        except ScenarioError as exc:
            if attempt + 1 == attempts:
                raise ScenarioError(f'{exc} (the last of {attempts} answers)') from exc
            continue
        break
    return scenario, scenario.dump()


__all__ = ['ActionMatch', 'all_scenarios', 'aut_factory', 'Criteria', 'find_scenario',
           'generate_scenario', 'history_lines', 'RecordingBackend', 'robot_scenarios',
           'run_scenario', 'run_suite', 'Scenario', 'ScenarioError', 'ScenarioReport',
           'shipped_scenarios', 'SCENARIO_DIR', 'suite_summary']
