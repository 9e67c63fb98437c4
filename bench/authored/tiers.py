"""The authored data in its three tiers, and each moment as the decision bench's situation.

Authors (bench/authored/authors.json) each wrote one capability's moments and scenarios
(FORMAT.md). An author's items stay together in one tier, so the split is by author:
- train: what a fit may see;
- validation: what choices are made on and failures read from;
- sealed: written by further authors, stored under bench/sealed/<batch>/ in sealed form
  (seal.py) and read only through `sealed_batch`, whose caller prints aggregates.

`to_situation` gives a moment the form bench/decisions/run.py's `grounding_of`,
`tools_for` and `label` read, so the Mind's own candidates and features are computed for it
exactly as for the generated moments.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SEALED = ROOT / 'bench' / 'sealed'
TIERS = ('train', 'validation', 'sealed')


def authors() -> dict[str, dict]:
    return json.loads((HERE / 'authors.json').read_text(encoding='utf-8'))


def capabilities() -> dict[str, str]:
    return json.loads((HERE / 'capabilities.json').read_text(encoding='utf-8'))


def _components():
    spec = importlib.util.spec_from_file_location(
        '_components', ROOT / 'maxim_eval' / 'maxim_eval' / 'scenario' / 'components.py')
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return {c.name: c for c in mod.SEED_COMPONENTS}


COMPONENTS = _components()


def _read_moments(path: Path, author: str, tier: str) -> list[dict]:
    out = []
    for line in path.read_text(encoding='utf-8').splitlines():
        if line.strip():
            m = json.loads(line)
            m['author'], m['tier'] = author, tier
            out.append(m)
    return out


def load_moments(tier: str) -> list[dict]:
    """The moments of a train or validation tier, author by author."""
    if tier not in ('train', 'validation'):
        raise ValueError(f'tier {tier!r}: train or validation (sealed: sealed_batch)')
    out = []
    for aid, a in sorted(authors().items()):
        path = HERE / aid / 'moments.jsonl'
        if a['tier'] == tier and path.is_file():
            out.extend(_read_moments(path, aid, tier))
    return out


def scenario_files(tier: str) -> list[Path]:
    out = []
    for aid, a in sorted(authors().items()):
        if a['tier'] == tier and (HERE / aid / 'scenarios').is_dir():
            out.extend(sorted((HERE / aid / 'scenarios').glob('*.yaml')))
    return out


def sealed_batch(batch: str) -> tuple[list[dict], dict[str, str]]:
    """The sealed batch's moments and scenarios (file name -> YAML text), decoded in memory.
    Its caller prints aggregates only: whoever changes the deciding code never reads these."""
    import seal
    moments, scenarios = [], {}
    folder = SEALED / batch
    if not folder.is_dir():
        raise FileNotFoundError(f'no sealed batch {batch!r} under {SEALED}')
    for f in sorted(folder.glob('*.sealed')):
        payload = seal.decode(f.read_text(encoding='ascii'))
        for m in payload['moments']:
            m['author'], m['tier'] = payload['author'], 'sealed'
            moments.append(m)
        scenarios.update(payload['scenarios'])
    return moments, scenarios


# -- a moment as the decision bench's situation ------------------------------------------------
def heard_text(heard: list[dict]) -> str:
    """People's words as the robot hears them: the console's 'The user says: "..."', a named
    person's '<Name> says: "..."', oldest first."""
    parts = []
    for h in heard:
        who = 'The user' if h['by'].strip().lower() == 'user' else h['by'].strip()
        parts.append(f'{who} says: "{h["text"].strip()}"')
    return ' '.join(parts)


def scene_tool(name: str) -> dict | None:
    """A text world's `<act>_<kind>` tool as the world declares it (its description, its
    parameters, the one that takes a secret)."""
    for kind, comp in COMPONENTS.items():
        for aff in comp.affordances:
            if name == f'{aff.verb}_{kind}':
                return {'name': name, 'scene': True, 'params': dict(aff.params),
                        'description': f'{aff.description} (the {kind})',
                        'secret': aff.secret_param}
    return None


def to_situation(m: dict) -> dict:
    """The decision bench's situation for an authored moment (bench/decisions/run.py)."""
    heard = m['heard']
    recent = m['recent']
    # Acts since the newest words: a line without after_acts came after every recent act.
    since = len(recent) - heard[-1].get('after_acts', len(recent)) if heard else -1
    objects = [o for o in m['objects'] if o != 'face']
    people = [o for o in m['objects'] if o == 'face']
    tools = []
    for t in m['tools']:
        spec = scene_tool(t)
        tools.append(spec if spec is not None else {'name': t})
    entities = list(m['entities'])
    percept = m['percept'] or (f'I see {", ".join(m["objects"])}.' if m['objects'] else '')
    return {
        'id': m['id'], 'family': m['capability'], 'split': m['tier'], 'author': m['author'],
        'percept': percept, 'heard': heard_text(heard), 'goal': m['goal'],
        'objects': objects, 'people': people, 'entities': entities,
        'recalled': list(m['memory']),
        'recent': [{'tool': r['tool'], 'args': dict(r.get('args') or {}),
                    'success': bool(r['success']), 'result': str(r.get('result', '')),
                    'entity': next((e for e in entities if r['tool'].endswith('_' + e)), '')}
                   for r in recent],
        'pains': [], 'acts_since_news': len(recent), 'acts_since_heard': since,
        # The live robot takes what it hears as said to it (the console and the voice are
        # its own ears): whether it was meant for it is for the chooser to tell.
        'someone_there': bool(heard) or bool(people), 'addressed': bool(heard),
        'from_tool': bool(recent) and not heard, 'scene': m['percept'] if entities else '',
        'tools': tools,
        'right': [{'tool': p['tool'], 'args': dict(p.get('args') or {})} for p in m['right']],
        'wrong': [{'tool': p['tool'], 'args': dict(p.get('args') or {})} for p in m['wrong']],
        'needs_act': any(p['tool'] is not None for p in m['right']),
    }
