"""Checks an author's moments and scenarios against bench/authored/FORMAT.md.

    python3 bench/authored/validate.py DIR [DIR ...]

DIR holds `moments.jsonl` and/or `scenarios/*.yaml`. Every problem is printed with its file
and line; the exit status is 1 when there is any. It needs only the standard library and
PyYAML, so an author can run it before anything else of the project is set up; the
text-world kinds and their acts are read from maxim_eval's component table.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
import re
import sys

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CAPABILITIES = json.loads((HERE / 'capabilities.json').read_text(encoding='utf-8'))

ROBOT_TOOLS = {
    'move': {'pan', 'tilt', 'relative', 'speed', 'duration_s'},
    'track_target': {'target_label', 'track_id', 'duration_s'},
    'focus_interests': {'duration_s'}, 'novelty_track': {'duration_s'},
    'scene_summary': {'include_attention', 'limit'},
    'memory_recall': {'query', 'keyword', 'tool_name', 'success', 'object', 'person', 'mode',
                      'time_after', 'time_before', 'expand', 'limit'},
    'respond': {'text'}, 'speak': {'text', 'voice'},
    'predict_outcome': {'tool_name', 'context', 'include_all_outcomes', 'limit'},
    'read_file': {'path', 'offset', 'limit'}, 'write_file': {'path', 'content'},
    'edit_file': {'path', 'old_text', 'new_text', 'context_before', 'context_after'},
    'glob': {'pattern', 'limit'}, 'bash': {'command', 'timeout_s'},
    'say': {'text'}, 'think': {'thought', 'text'}, 'examine': {'target'}, 'perceive': set(),
    'sense_entity': {'entity', 'entity_id'},
}
COLOURS = ('red', 'green', 'blue', 'yellow', 'orange')
MOMENT_KEYS = {'id', 'capability', 'goal', 'percept', 'objects', 'entities', 'heard', 'memory',
               'recent', 'tools', 'right', 'wrong', 'why'}
SCENARIO_KEYS = {'name', 'description', 'goal', 'memories', 'entities', 'allowed_tools',
                 'turns', 'completion', 'aut', 'world', 'setup'}
COMPLETION_KEYS = {'expected_actions', 'forbidden_actions', 'said', 'judge', 'body', 'in_order'}
PATTERN_KEYS = {'tool', 'args', 'outcome', 'output', 'from_turn', 'to_turn', 'at_least'}
_NAME = re.compile(r'^[a-z0-9][a-z0-9_\-]{0,63}$')


def scene_acts() -> dict[str, dict[str, set]]:
    """kind -> act verb -> its parameters, from the text worlds' component table."""
    spec = importlib.util.spec_from_file_location(
        '_components', ROOT / 'maxim_eval' / 'maxim_eval' / 'scenario' / 'components.py')
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return {c.name: {a.verb: set(a.params) for a in c.affordances}
            for c in mod.SEED_COMPONENTS}


SCENE = scene_acts()
SCENE_TOOLS = {f'{verb}_{kind}': params for kind, acts in SCENE.items()
               for verb, params in acts.items()}


def tool_params(name: str) -> set | None:
    """The parameters of a tool an item may name; None for a tool that does not exist."""
    if name in ROBOT_TOOLS:
        return ROBOT_TOOLS[name]
    return SCENE_TOOLS.get(name)


class Problems:
    def __init__(self):
        self.items: list[str] = []

    def add(self, where: str, what: str) -> None:
        self.items.append(f'{where}: {what}')


def _pattern(p, where: str, tools: list, out: Problems) -> None:
    if not isinstance(p, dict) or 'tool' not in p:
        out.add(where, f'a pattern is {{"tool": NAME or null, "args": {{...}}}}, not {p!r}')
        return
    if set(p) - {'tool', 'args'}:
        out.add(where, f'unknown pattern keys {sorted(set(p) - {"tool", "args"})}')
    tool, args = p['tool'], p.get('args') or {}
    if tool is None:
        if args:
            out.add(where, 'waiting ({"tool": null}) takes no args')
        return
    if not isinstance(tool, str) or tool_params(tool) is None:
        out.add(where, f'unknown tool {tool!r}')
        return
    if tool not in tools:
        out.add(where, f"{tool} is not among the moment's tools")
    if not isinstance(args, dict):
        out.add(where, 'args must be an object')
        return
    for k, v in args.items():
        if k not in tool_params(tool):
            out.add(where, f'{tool} has no argument {k!r} (it has {sorted(tool_params(tool))})')
        if isinstance(v, dict):
            if set(v) != {'re'} or not isinstance(v['re'], str):
                out.add(where, f'argument {k}: a pattern is {{"re": "..."}}')
                continue
            try:
                re.compile(v['re'])
            except re.error as exc:
                out.add(where, f'argument {k}: bad regex: {exc}')
        elif not isinstance(v, (str, int, float, bool)):
            out.add(where, f'argument {k}: a value is a string, number, boolean or {{"re"}}')


def check_moment(m, where: str, author: str, out: Problems) -> None:
    if not isinstance(m, dict):
        out.add(where, 'a moment is a JSON object')
        return
    missing, extra = MOMENT_KEYS - set(m), set(m) - MOMENT_KEYS
    if missing:
        out.add(where, f'missing fields {sorted(missing)}')
    if extra:
        out.add(where, f'unknown fields {sorted(extra)}')
    if missing:
        return
    if not str(m['id']).startswith(f'{author}-'):
        out.add(where, f'id {m["id"]!r} must start with "{author}-"')
    if m['capability'] not in CAPABILITIES:
        out.add(where, f'capability {m["capability"]!r} is not one of {sorted(CAPABILITIES)}')
    for k in ('goal', 'percept', 'why'):
        if not isinstance(m[k], str):
            out.add(where, f'{k} is a string')
    for k in ('objects', 'entities', 'memory', 'tools'):
        if not isinstance(m[k], list) or not all(isinstance(x, str) for x in m[k]):
            out.add(where, f'{k} is a list of strings')
            return
    for o in m['objects']:
        if o not in ('face', 'moving thing') and not re.fullmatch(
                rf'({"|".join(COLOURS)}) object', o):
            out.add(where, f'object {o!r}: vision labels are "<colour> object" '
                    f'({", ".join(COLOURS)}), "face" or "moving thing"')
    for e in m['entities']:
        if e not in SCENE:
            out.add(where, f'entity {e!r} is not a text-world kind ({", ".join(SCENE)})')
    if not isinstance(m['heard'], list) or not all(
            isinstance(h, dict) and {'by', 'text'} <= set(h) <= {'by', 'text', 'after_acts'}
            and isinstance(h['by'], str) and isinstance(h['text'], str) and h['text'].strip()
            and (not isinstance(m['recent'], list) or 0 <= h.get('after_acts', 0)
                 <= len(m['recent']))
            for h in m['heard']):
        out.add(where, 'heard is a list of {"by": "user" or a name, "text": "...", and '
                'optionally "after_acts": 0 to the number of recent acts}')
    if not isinstance(m['recent'], list):
        out.add(where, 'recent is a list')
    else:
        for r in m['recent']:
            if not isinstance(r, dict) or set(r) - {'tool', 'args', 'success', 'result'} \
                    or not isinstance(r.get('tool'), str) or not isinstance(
                        r.get('success'), bool) or not isinstance(r.get('args', {}), dict):
                out.add(where, 'a recent act is {"tool", "args", "success": bool, "result"}')
            elif tool_params(r['tool']) is None:
                out.add(where, f'recent act of unknown tool {r["tool"]!r}')
    for t in m['tools']:
        if tool_params(t) is None:
            out.add(where, f'unknown tool {t!r}')
    for k in ('right', 'wrong'):
        if not isinstance(m[k], list) or not m[k]:
            out.add(where, f'{k} is a non-empty list of act patterns')
            continue
        for p in m[k]:
            _pattern(p, f'{where} {k}', m['tools'], out)


def check_moments(path: Path, author: str, out: Problems) -> int:
    ids, n = set(), 0
    for i, line in enumerate(path.read_text(encoding='utf-8').splitlines(), 1):
        if not line.strip():
            continue
        where = f'{path}:{i}'
        try:
            m = json.loads(line)
        except json.JSONDecodeError as exc:
            out.add(where, f'not JSON: {exc}')
            continue
        n += 1
        check_moment(m, where, author, out)
        if isinstance(m, dict):
            if m.get('id') in ids:
                out.add(where, f'id {m.get("id")!r} used twice')
            ids.add(m.get('id'))
    return n


def _apattern(p, where: str, out: Problems) -> None:
    if isinstance(p, str):
        p = {'tool': p}
    if not isinstance(p, dict) or not isinstance(p.get('tool'), str):
        out.add(where, f'an action pattern needs a tool name: {p!r}')
        return
    if set(p) - PATTERN_KEYS:
        out.add(where, f'unknown action pattern keys {sorted(set(p) - PATTERN_KEYS)}')
    for k, v in list((p.get('args') or {}).items()) + [('tool', p['tool'])]:
        try:
            re.compile(str(v))
        except re.error as exc:
            out.add(where, f'bad regex for {k}: {exc}')
    names = [t for t in list(ROBOT_TOOLS) + list(SCENE_TOOLS)
             if re.fullmatch(p['tool'], t)]
    if not names:
        out.add(where, f'tool {p["tool"]!r} matches no tool a robot or text world has')


def check_scenario(path: Path, author: str, out: Problems) -> None:
    import yaml
    where = str(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding='utf-8'))
    except yaml.YAMLError as exc:
        out.add(where, f'not YAML: {exc}')
        return
    if not isinstance(raw, dict):
        out.add(where, 'the top level is a mapping')
        return
    if set(raw) - SCENARIO_KEYS:
        out.add(where, f'unknown keys {sorted(set(raw) - SCENARIO_KEYS)}')
    name = str(raw.get('name', ''))
    if not _NAME.match(name) or not name.startswith(f'{author}-s'):
        out.add(where, f'name {name!r}: "{author}-s<number>-<slug>", a-z 0-9 _ - only')
    if not isinstance(raw.get('goal'), str) or not raw['goal'].strip():
        out.add(where, 'a scenario needs a goal')
    world = raw.get('world', 'text')
    if world not in ('text', 'robot'):
        out.add(where, 'world is text or robot')
    turns = raw.get('turns') or []
    if not isinstance(turns, list) or not turns:
        out.add(where, 'a scenario needs turns')
        turns = []
    for k, t in enumerate(turns, 1):
        t = {'message': t} if isinstance(t, str) else t
        kinds = [x for x in ('message', 'pain', 'world') if isinstance(t, dict) and x in t]
        if len(kinds) != 1:
            out.add(where, f'turn {k}: exactly one of message, pain, world')
        elif kinds[0] == 'world' and world != 'robot':
            out.add(where, f'turn {k}: world events are for a robot world')
        elif kinds[0] == 'pain' and not (isinstance(t['pain'], dict)
                                         and {'pain_type', 'intensity'} <= set(t['pain'])
                                         and isinstance(t['pain']['pain_type'], str)
                                         and t['pain']['pain_type'].strip()):
            out.add(where, f'turn {k}: pain needs pain_type (a word) and intensity')
    comp = raw.get('completion') or {}
    if not isinstance(comp, dict) or set(comp) - COMPLETION_KEYS:
        out.add(where, f'completion keys are {sorted(COMPLETION_KEYS)}')
        comp = {}
    for key in ('expected_actions', 'forbidden_actions', 'in_order'):
        for p in comp.get(key) or []:
            _apattern(p, f'{where} {key}', out)
    body = comp.get('body') or []
    if body and world != 'robot':
        out.add(where, 'body criteria are for a robot world')
    if not (comp.get('expected_actions') or body or comp.get('in_order') or comp.get('said')):
        out.add(where, 'completion needs an expected action, a body criterion or said')
    setup = raw.get('setup') or {}
    if world == 'robot':
        if 'allowed_tools' in raw:
            out.add(where, "a robot world uses the robot's own tools: leave allowed_tools out")
        names = set()
        for o in setup.get('objects') or []:
            if not isinstance(o, dict) or o.get('colour') not in COLOURS or 'name' not in o:
                out.add(where, f'object {o!r}: name and colour ({", ".join(COLOURS)})')
            else:
                names.add(o['name'])
        for b in body:
            for key in ('pointed_at', 'looked_at'):
                if key in b and b[key] not in names:
                    out.add(where, f'{key}: no object {b[key]!r} in setup')
    elif setup:
        out.add(where, 'setup is for a robot world')
    else:
        for t in raw.get('allowed_tools') or []:
            if t not in ROBOT_TOOLS:
                out.add(where, f'allowed_tools: unknown tool {t!r}')
        for ent in raw.get('entities') or {}:
            if ent not in SCENE:
                out.add(where, f'entities: {ent!r} is not a kind ({", ".join(SCENE)})')


def check_dir(d: Path, out: Problems) -> tuple[int, int]:
    author = d.name
    n_m = check_moments(d / 'moments.jsonl', author, out) if (d / 'moments.jsonl').exists() \
        else 0
    n_s = 0
    for p in sorted((d / 'scenarios').glob('*.yaml')) if (d / 'scenarios').is_dir() else []:
        n_s += 1
        check_scenario(p, author, out)
    return n_m, n_s


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Problems()
    for arg in argv:
        d = Path(arg).resolve()
        if not d.is_dir():
            out.add(arg, 'not a folder')
            continue
        n_m, n_s = check_dir(d, out)
        print(f'{d}: {n_m} moments, {n_s} scenarios')
    for line in out.items:
        print(line)
    print('OK' if not out.items else f'{len(out.items)} problem(s)')
    return 1 if out.items else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
