"""The agent-under-test's narrative tools and the scene they act in (seeds 000, 001).

say / think / examine / memory_recall let the AUT speak in-world, reason explicitly, look at
what its percepts mention and recall its own episodes; sense_tools / perceive / sense_entity
let it discover its world. Entities named in percepts are imagined from the ComponentIndex
and their affordances join the scene's tool scope as `<verb>_<entity>` tools (open_door,
wake_guard), so the deliberation schema lets the model name them as soon as they exist.
The read-only ones are flagged introspection (they bypass the fear gate); say, set_scene,
request_interaction and entity actions are reviewed like any act.
"""

from collections import deque
import logging
import re
from typing import Any, Callable, Mapping

from maxim_common.errors import ERROR_EXECUTION
from maxim_core.deliberation.candidates import GROUNDING_KEY
from maxim_core.tools.base import Tool, ToolOutcome
from maxim_core.tools.scope import ToolScope
from maxim_eval.scenario.components import (Affordance, ComponentIndex, initial_sensors,
                                            SceneEntity)
from maxim_eval.scenario.memory import keywords, SimMemory

NOTHING_NOTABLE = "You don't see anything notable."
# The simulation's tools are Maxim's own code outside maxim_core: they declare why they run in
# the mind's process (maxim_core.tools.contained), as they did as built-in tools when they were
# maxim_core's. Their registrations are not logged, as a built-in tool's is not.
SIM_IN_PROCESS = ("a simulation tool: it acts on the scenario's imagined scene and session "
                  'in memory, holds no path and has no side effect')


class _SimToolRegistrations(logging.Filter):
    """Drops the registration WARNING of a tool that declared SIM_IN_PROCESS."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        return not (len(args) == 2 and args[1] == SIM_IN_PROCESS)


logging.getLogger('maxim_core.tools.contained').addFilter(_SimToolRegistrations())
_TEXT = {'type': 'string', 'minLength': 1, 'maxLength': 300}

NARRATIVE_DESCRIPTIONS: dict[str, dict] = {
    'say': {'description': 'Say something aloud in the scene (to a person there, a password, '
                           'an answer). Not the console.',
            'params': {'text': 'what you say'}},
    'think': {'description': 'Reason about the situation before acting (uses one action of '
                             'your turn).',
              'params': {'thought': 'your reasoning'}},
    'examine': {'description': 'Look closely at something or someone in the scene.',
                'params': {'target': 'what to examine'}},
    'memory_recall': {'description': 'Remember: search your own memories by keyword.',
                      'params': {'keyword': 'what to remember',
                                 'expand': 'also associated memories'}},
    'sense_tools': {'description': 'Find which of YOUR actions fit an intent.',
                    'params': {'query': 'what you want to do'}},
    'perceive': {'description': 'Scan your surroundings: you and the entities in the scene.',
                 'params': {}},
    'sense_entity': {'description': 'Read the detailed state of one entity in the scene.',
                     'params': {'entity': 'the name of an entity in the scene'}},
    'set_scene': {'description': 'Move to another scene (its tools activate, the old ones '
                                 'deactivate).', 'params': {'scene_id': 'scene name'}},
    'request_interaction': {'description': 'Ask the person a question (last resort, only for '
                                           'a genuine preference).',
                            'params': {'question': 'your question'}},
}


class Scene:
    """Entities imagined from percepts, the last percepts, and what the agent holds."""

    def __init__(self, scope: ToolScope, index: ComponentIndex | None = None,
                 scene_id: str = 'start',
                 overrides: Mapping[str, Mapping[str, Any]] | None = None,
                 percepts_kept: int = 8):
        self.scope = scope
        self.index = index or ComponentIndex()
        self.overrides = {k: dict(v) for k, v in (overrides or {}).items()}
        self.scene_id = scene_id
        self.scenes: dict[str, dict[str, SceneEntity]] = {scene_id: {}}
        self.percepts: deque = deque(maxlen=percepts_kept)
        self.inventory: set[str] = set()
        self.physical_tools: set[str] = set()
        self.imagined: list[str] = []          # entity ids in order of instantiation

    @property
    def entities(self) -> dict[str, SceneEntity]:
        return self.scenes[self.scene_id]

    def observe(self, text: str) -> list[SceneEntity]:
        """A percept: remember it, and imagine the entities it mentions for the first time."""
        self.percepts.append(text)
        return self.imagine(text)

    def imagine(self, text: str) -> list[SceneEntity]:
        """The imagination trigger: novel entity phrases -> live entities with tools."""
        new = []
        for comp, phrase, sentence in self.index.find(text):
            if comp.name in self.entities:
                continue
            sensors = {k: v for k, v in (self.overrides.get(comp.name) or {}).items()
                       if k != 'requires'}
            entity = SceneEntity(comp.name, comp, phrase,
                                 initial_sensors(comp, sentence, sensors))
            self.entities[comp.name] = entity
            self.imagined.append(comp.name)
            new.append(entity)
            tools = [EntityTool(self, entity, aff) for aff in comp.affordances]
            self.physical_tools.update(t.name for t in tools if t.affordance.physical)
            self.scope.register_scene_tools(tools, self.scene_id)
        return new

    def enter(self, scene_id: str) -> list[str]:
        """Move to another scene: its entity tools on, the others off."""
        if not isinstance(scene_id, str) or not scene_id.strip():
            raise ValueError('scene_id must be a non-empty string')
        self.scene_id = scene_id
        self.scenes.setdefault(scene_id, {})
        return self.scope.enter_scene(scene_id)

    def unmet(self, entity_id: str, verb: str) -> str:
        """What a scenario says an act on an entity needs and the scene does not give, in
        words ('' when nothing): `entities.<id>.requires.<verb>` is {holds: ITEM} (the agent
        holds it) and/or {entity: ID, state: {SENSOR: VALUE}} (another entity's state)."""
        need = ((self.overrides.get(entity_id) or {}).get('requires') or {}).get(verb)
        if not need:
            return ''
        item = need.get('holds')
        if item and item not in self.inventory:
            return f'the {entity_id} will not {verb.replace("_", " ")} until you hold a {item}'
        other = need.get('entity')
        if other:
            ent = self.entities.get(other)
            state = need.get('state') or {}
            if ent is None or any(ent.sensors.get(k) != v for k, v in state.items()):
                return (f'the {entity_id} will not {verb.replace("_", " ")}: something else '
                        f'has to change first')
        return ''

    def entity(self, name: str) -> SceneEntity | None:
        name = name.strip().lower()
        if name in self.entities:
            return self.entities[name]
        for word in reversed(name.split()):
            comp = self.index.match(word)
            if comp is not None and comp.name in self.entities:
                return self.entities[comp.name]
        return None


class EntityTool(Tool):
    """One affordance of one entity, as a scene tool."""

    category = 'scene'
    in_process = SIM_IN_PROCESS

    def __init__(self, scene: Scene, entity: SceneEntity, affordance: Affordance):
        self.scene, self.entity, self.affordance = scene, entity, affordance
        props = {p: dict(_TEXT, description=d) for p, d in affordance.params.items()}
        if affordance.secret_param in props:
            # A code or password is what the robot was told or recalls, never a word of
            # the scene (choice.GROUNDING_KEY).
            props[affordance.secret_param][GROUNDING_KEY] = 'recalled'
        super().__init__(f'{affordance.verb}_{entity.entity_id}',
                         f'{affordance.description} ({entity.phrase})',
                         {'type': 'object', 'properties': props,
                          'required': list(affordance.params)})

    def execute(self, **args) -> ToolOutcome:
        aff, ent = self.affordance, self.entity
        for key, value in aff.requires.items():
            if ent.sensors.get(key) != value:
                return ToolOutcome.fail(f'cannot {aff.verb.replace("_", " ")} the '
                                        f'{ent.entity_id}: its {key} is '
                                        f'{ent.sensors.get(key)!r}', ERROR_EXECUTION,
                                        output={'entity': ent.entity_id,
                                                'state': ent.public_sensors()})
        if aff.secret_param:
            secret = ent.sensors.get('secret')
            given = str(args.get(aff.secret_param, '')).strip().lower()
            if secret is not None and given != str(secret).strip().lower():
                return ToolOutcome.fail(f'the {ent.entity_id} does not accept '
                                        f'{args.get(aff.secret_param)!r}', ERROR_EXECUTION)
            if secret is None and 'key' not in self.scene.inventory:
                return ToolOutcome.fail(f'you need a key to {aff.verb} the {ent.entity_id}',
                                        ERROR_EXECUTION)
        if aff.needs_item and aff.needs_item not in self.scene.inventory:
            return ToolOutcome.fail(f'you need a {aff.needs_item}', ERROR_EXECUTION)
        why = self.scene.unmet(ent.entity_id, aff.verb)
        if why:
            return ToolOutcome.fail(why, ERROR_EXECUTION,
                                    output={'entity': ent.entity_id,
                                            'state': ent.public_sensors()})
        ent.sensors.update(aff.sets)
        if aff.gives_item:
            self.scene.inventory.add(aff.gives_item)
        return ToolOutcome.ok({'narrative': aff.narrative or f'You {aff.verb} the '
                               f'{ent.entity_id}.', 'entity': ent.entity_id,
                               'state': ent.public_sensors()})


class SayTool(Tool):
    name = 'say'
    description = 'Say something aloud in the current scene.'
    input_schema = {'type': 'object', 'properties': {'text': _TEXT}, 'required': ['text']}
    category = 'narrative'
    in_process = SIM_IN_PROCESS

    def execute(self, text: str) -> ToolOutcome:
        return ToolOutcome.ok({'said': text}, text=text)


class ThinkTool(Tool):
    name = 'think'
    description = 'Reason explicitly before acting.'
    input_schema = {'type': 'object', 'properties': {'thought': _TEXT},
                    'required': ['thought']}
    introspection = True
    category = 'narrative'
    in_process = SIM_IN_PROCESS

    def execute(self, thought: str) -> ToolOutcome:
        return ToolOutcome.ok({'thought': thought})


class ExamineTool(Tool):
    name = 'examine'
    description = 'Examine an object, person or feature of the scene.'
    input_schema = {'type': 'object', 'properties': {'target': _TEXT}, 'required': ['target']}
    introspection = True
    category = 'narrative'
    in_process = SIM_IN_PROCESS

    def __init__(self, scene: Scene, memory: SimMemory):
        super().__init__()
        self.scene, self.memory = scene, memory

    def execute(self, target: str) -> ToolOutcome:
        words = keywords(target) or {target.strip().lower()}
        entity = self.scene.entity(target)
        if entity is not None:
            words |= {entity.entity_id, *entity.component.aliases}
        seen = []
        for percept in reversed(self.scene.percepts):
            for sentence in re.split(r'(?<=[.!?])\s+', percept):
                low = sentence.lower()
                if any(re.search(rf'\b{re.escape(w)}', low) for w in words) and \
                        sentence not in seen:
                    seen.append(sentence.strip())
        memories = [m['text'] for m in self.memory.recall(target, expand=False, limit=2)] \
            if seen or entity else []
        if not seen and entity is None and not memories:
            return ToolOutcome.ok({'observation': NOTHING_NOTABLE}, notable=False)
        out: dict[str, Any] = {'observation': ' '.join(seen[:4]) or f'the {entity.phrase}'}
        if entity is not None:
            out['state'] = entity.public_sensors()
        if memories:
            out['you_remember'] = memories
        return ToolOutcome.ok(out, notable=True)


class MemoryRecallTool(Tool):
    name = 'memory_recall'
    description = 'Search your own episodic memory by keyword.'
    input_schema = {'type': 'object', 'properties': {
        'keyword': {'type': 'string', 'minLength': 1, 'maxLength': 100},
        'expand': {'type': 'boolean', 'default': True}}, 'required': ['keyword']}
    introspection = True
    category = 'narrative'
    in_process = SIM_IN_PROCESS

    def __init__(self, memory: SimMemory, limit: int = 4):
        super().__init__()
        self.memory, self.limit = memory, limit

    def execute(self, keyword: str, expand: bool = True) -> ToolOutcome:
        found = self.memory.recall(keyword, expand, self.limit)
        if not found:
            return ToolOutcome.ok({'memories': [], 'note': f'You remember nothing about '
                                   f'{keyword!r}.'})
        return ToolOutcome.ok({'memories': [f'{m["text"]}' + (' (associated)' if
                                                              m['via'] == 'spread' else '')
                                            for m in found]})


class SenseToolsTool(Tool):
    name = 'sense_tools'
    description = 'Find your own actions matching an intent.'
    input_schema = {'type': 'object', 'properties': {
        'query': {'type': 'string', 'minLength': 1, 'maxLength': 100}}, 'required': ['query']}
    introspection = True
    category = 'narrative'
    in_process = SIM_IN_PROCESS

    def __init__(self, scene: Scene, active_tools: Callable[[], list]):
        super().__init__()
        self.scene, self.active_tools = scene, active_tools

    def execute(self, query: str) -> ToolOutcome:
        words = keywords(query) or {query.strip().lower()}
        matches = []
        for t in self.active_tools():
            hay = f'{t.name.replace("_", " ")} {t.description}'.lower()
            if any(w in hay for w in words):
                matches.append({'tool': t.name, 'description': t.description})
        out: dict[str, Any] = {'your_actions': matches[:8]}
        hints = []
        for ent in self.scene.entities.values():
            caps = ' '.join(ent.component.capabilities).lower()
            if ent.entity_id in words or any(w in caps for w in words):
                hints.append(f'{ent.entity_id!r} is a scene entity: what it can do is '
                             f'observed, not yours; use sense_entity("{ent.entity_id}")')
        if hints:
            out['hints'] = hints
        if not matches:
            out['note'] = f'none of your actions matches {query!r}'
        return ToolOutcome.ok(out)


class PerceiveTool(Tool):
    name = 'perceive'
    description = 'Scan your surroundings for entities.'
    input_schema = {'type': 'object', 'properties': {}}
    introspection = True
    category = 'narrative'
    in_process = SIM_IN_PROCESS

    def __init__(self, scene: Scene, active_tools: Callable[[], list]):
        super().__init__()
        self.scene, self.active_tools = scene, active_tools

    def execute(self) -> ToolOutcome:
        new = self.scene.imagine(self.scene.percepts[-1]) if self.scene.percepts else []
        names = sorted(t.name for t in self.active_tools())
        held = ', '.join(sorted(self.scene.inventory)) or 'nothing'
        lines = [f'[YOU] a robot mind in scene {self.scene.scene_id!r}; you hold {held}; '
                 f'your actions: {", ".join(names)}']
        lines += [e.describe() for e in self.scene.entities.values()]
        if len(lines) == 1:
            lines.append('[SCENE] nothing else you can make out')
        return ToolOutcome.ok({'perceived': lines, 'newly_imagined': [e.entity_id for e in new]})


class SenseEntityTool(Tool):
    name = 'sense_entity'
    description = 'Read the sensor state of one entity.'
    input_schema = {'type': 'object', 'properties': {
        'entity': {'type': 'string', 'minLength': 1, 'maxLength': 64,
                   GROUNDING_KEY: 'names'}}, 'required': ['entity']}
    introspection = True
    category = 'narrative'
    in_process = SIM_IN_PROCESS

    def __init__(self, scene: Scene):
        super().__init__()
        self.scene = scene

    def execute(self, entity: str) -> ToolOutcome:
        ent = self.scene.entity(entity)
        if ent is None:
            known = ', '.join(sorted(self.scene.entities)) or 'none'
            return ToolOutcome.fail(f'no entity {entity!r} in this scene (known: {known})',
                                    ERROR_EXECUTION)
        return ToolOutcome.ok({'entity': ent.entity_id, 'category': ent.component.category,
                               'sensors': ent.public_sensors(),
                               'capabilities': list(ent.component.capabilities)})


class SetSceneTool(Tool):
    name = 'set_scene'
    description = 'Move to another scene.'
    input_schema = {'type': 'object', 'properties': {
        'scene_id': {'type': 'string', 'minLength': 1, 'maxLength': 64}},
        'required': ['scene_id']}
    category = 'interactive'
    in_process = SIM_IN_PROCESS

    def __init__(self, scene: Scene):
        super().__init__()
        self.scene = scene

    def execute(self, scene_id: str) -> ToolOutcome:
        self.scene.enter(scene_id)
        return ToolOutcome.ok({'scene': scene_id,
                               'entities': sorted(self.scene.entities)})


class RequestInteractionTool(Tool):
    name = 'request_interaction'
    description = 'Ask the person a question.'
    input_schema = {'type': 'object', 'properties': {'question': _TEXT},
                    'required': ['question']}
    category = 'interactive'
    in_process = SIM_IN_PROCESS

    def execute(self, question: str) -> ToolOutcome:
        return ToolOutcome.ok({'asked': question, 'note': 'the answer will come as a new '
                               'percept'}, question=question)


def narrative_tools(scene: Scene, memory: SimMemory,
                    active_tools: Callable[[], list]) -> list[Tool]:
    """The AUT's narrative, discovery and interactive tools."""
    return [SayTool(), ThinkTool(), ExamineTool(scene, memory), MemoryRecallTool(memory),
            SenseToolsTool(scene, active_tools), PerceiveTool(scene, active_tools),
            SenseEntityTool(scene), SetSceneTool(scene), RequestInteractionTool()]
