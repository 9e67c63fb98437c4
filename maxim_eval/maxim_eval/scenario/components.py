"""The imagination trigger's component index and the narrative scene (seed 000).

A percept that mentions an entity the agent has not met ("a sleeping guard", "the locked
door") instantiates it from a seed component: sensors (state the agent can read with
sense_entity), capabilities (what the entity itself can do: observed, not callable) and
affordances (what the agent can do with it: these become tools in the scene's scope).
Adjectives and state words in the same sentence set the initial sensors ("locked",
"sleeping", "open"). The index is a small data table, not a model: extraction is a word
match on names and aliases, which is enough for scripted narratives and keeps replays exact.
"""

from dataclasses import dataclass, field
import re
from typing import Any, Iterable, Mapping

CATEGORIES = ('structure', 'container', 'person', 'creature', 'item', 'terrain', 'hazard')


@dataclass(frozen=True)
class Affordance:
    """One thing the agent can do with an entity (a scene tool `<verb>_<entity>`)."""

    verb: str
    description: str
    params: Mapping[str, str] = field(default_factory=dict)   # name -> description (strings)
    requires: Mapping[str, Any] = field(default_factory=dict)  # sensor -> value needed
    sets: Mapping[str, Any] = field(default_factory=dict)      # sensor -> value after
    secret_param: str = ''      # this param must equal the entity's hidden 'secret' sensor
    needs_item: str = ''        # an item the agent must hold (e.g. key)
    gives_item: str = ''        # an item the agent holds afterwards
    physical: bool = False      # a bodily action: inhibited by strong pain
    narrative: str = ''         # what the agent experiences when it works


@dataclass(frozen=True)
class Component:
    """A seed component of the index."""

    name: str
    category: str
    aliases: tuple = ()
    sensors: Mapping[str, Any] = field(default_factory=dict)
    capabilities: tuple = ()
    affordances: tuple = ()
    states: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # word -> sensors


def _a(verb, description, **kw) -> Affordance:
    return Affordance(verb, description, **kw)


SEED_COMPONENTS: tuple[Component, ...] = (
    # structure
    Component('door', 'structure', ('doorway', 'gate', 'portal'),
              {'open': False, 'locked': False},
              ('blocks the way when closed',),
              (_a('open', 'Open the door.', requires={'locked': False}, sets={'open': True},
                  physical=True, narrative='The door swings open.'),
               _a('unlock', 'Unlock the door with a code or password (or a key you hold).',
                  params={'code': 'the code or password'}, requires={'locked': True},
                  sets={'locked': False}, secret_param='code',
                  narrative='The lock clicks: the door is unlocked.'),
               _a('knock', 'Knock on the door.', narrative='You knock. The sound echoes.')),
              {'locked': {'locked': True, 'open': False}, 'open': {'open': True},
               'closed': {'open': False}, 'unlocked': {'locked': False}}),
    Component('lock', 'structure', ('padlock', 'keypad'), {'locked': True},
              ('keeps something shut',),
              (_a('pick', 'Try to pick the lock.', requires={'locked': True},
                  sets={'locked': False}, physical=True, narrative='The lock gives way.'),),
              {'open': {'locked': False}}),
    Component('wall', 'structure', ('fence',), {'height_m': 3.0}, ('blocks the way',),
              (_a('climb', 'Climb over the wall.', physical=True,
                  narrative='You climb over the wall.'),),
              {'low': {'height_m': 1.0}, 'high': {'height_m': 5.0}}),
    Component('bridge', 'structure', (), {'intact': True}, ('spans a gap',),
              (_a('cross', 'Walk across the bridge.', requires={'intact': True},
                  physical=True, narrative='You cross the bridge.'),),
              {'broken': {'intact': False}, 'rickety': {'intact': True}}),
    Component('ladder', 'structure', (), {'stable': True}, (),
              (_a('climb', 'Climb the ladder.', physical=True, narrative='You climb up.'),), {}),
    # container
    Component('chest', 'container', ('box', 'crate', 'trunk'),
              {'open': False, 'locked': False},
              ('holds things inside',),
              (_a('unlock', 'Unlock the chest with a key you hold.', requires={'locked': True},
                  sets={'locked': False}, needs_item='key',
                  narrative='The key turns: the chest is unlocked.'),
               _a('open', 'Open the chest.', requires={'locked': False}, sets={'open': True},
                  physical=True, narrative='The lid creaks open.'),
               _a('take_from', 'Take what is inside the chest.', requires={'open': True},
                  gives_item='treasure', physical=True,
                  narrative='You take what lies inside.')),
              {'locked': {'locked': True}, 'open': {'open': True}}),
    Component('drawer', 'container', ('cupboard', 'cabinet'), {'open': False}, (),
              (_a('open', 'Open it.', sets={'open': True}, physical=True,
                  narrative='It slides open.'),), {}),
    # person
    Component('guard', 'person', ('sentry', 'watchman', 'soldier'),
              {'awake': True, 'hostile': False, 'alert': 0.5},
              ('raises the alarm', 'blocks the way', 'talks'),
              (_a('wake', 'Wake the guard.', requires={'awake': False},
                  sets={'awake': True, 'alert': 1.0}, physical=True,
                  narrative='The guard wakes with a start.'),
               _a('sneak_past', 'Sneak past the guard quietly.', requires={'awake': False},
                  physical=True, narrative='You slip past unnoticed.'),
               _a('greet', 'Greet the guard.', requires={'awake': True},
                  narrative='The guard nods at you.')),
              {'sleeping': {'awake': False, 'alert': 0.0},
               'asleep': {'awake': False, 'alert': 0.0},
               'sleeps': {'awake': False, 'alert': 0.0},
               'dozing': {'awake': False, 'alert': 0.1}, 'angry': {'hostile': True},
               'hostile': {'hostile': True}, 'awake': {'awake': True}}),
    Component('child', 'person', ('kid', 'boy', 'girl'), {'upset': False},
              ('talks', 'moves unpredictably'),
              (_a('comfort', 'Comfort the child.', sets={'upset': False},
                  narrative='The child calms down.'),),
              {'crying': {'upset': True}, 'upset': {'upset': True}}),
    Component('merchant', 'person', ('trader', 'shopkeeper'), {'has_goods': True},
              ('sells things', 'talks'),
              (_a('trade', 'Trade with the merchant.', params={'item': 'what you want'},
                  narrative='The merchant considers your offer.'),), {}),
    # creature
    Component('dragon', 'creature', ('wyrm', 'drake'),
              {'health': 100, 'awake': True, 'hostile': True},
              ('breathes fire', 'flies', 'guards treasure'),
              (_a('attack', 'Attack the dragon.', physical=True,
                  narrative='You strike; the dragon roars.'),
               _a('hide_from', 'Hide from the dragon.', physical=True,
                  narrative='You crouch out of sight.'),
               _a('flee_from', 'Run away from the dragon.', physical=True,
                  narrative='You run.')),
              {'sleeping': {'awake': False}, 'asleep': {'awake': False},
               'sleeps': {'awake': False}, 'wounded': {'health': 40}}),
    Component('dog', 'creature', ('hound', 'puppy', 'wolf'), {'hostile': False, 'awake': True},
              ('barks', 'bites'),
              (_a('pet', 'Pet the dog.', requires={'hostile': False}, physical=True,
                  narrative='It wags its tail.'),),
              {'growling': {'hostile': True}, 'sleeping': {'awake': False},
               'sleeps': {'awake': False},
               'friendly': {'hostile': False}}),
    # item
    Component('key', 'item', (), {'held': False}, (),
              (_a('take', 'Pick up the key.', sets={'held': True}, gives_item='key',
                  physical=True, narrative='You pocket the key.'),), {}),
    Component('torch', 'item', ('lantern', 'lamp'), {'lit': False}, ('gives light',),
              (_a('take', 'Pick up the torch.', gives_item='torch', physical=True,
                  narrative='You hold the torch.'),
               _a('light', 'Light the torch.', sets={'lit': True},
                  narrative='Light fills the room.')),
              {'lit': {'lit': True}, 'burning': {'lit': True}}),
    Component('rope', 'item', (), {}, (),
              (_a('take', 'Pick up the rope.', gives_item='rope', physical=True,
                  narrative='You coil the rope over your shoulder.'),), {}),
    Component('note', 'item', ('letter', 'scroll', 'sign'), {'text': ''}, (),
              (_a('read', 'Read what is written.', narrative='You read it carefully.'),), {}),
    Component('sword', 'item', ('blade', 'dagger', 'knife'), {}, ('cuts',),
              (_a('take', 'Pick up the weapon.', gives_item='sword', physical=True,
                  narrative='You grip the weapon.'),), {}),
    # terrain
    Component('river', 'terrain', ('stream', 'creek'), {'depth_m': 1.0, 'current': 0.5},
              ('flows', 'sweeps things away'),
              (_a('cross', 'Wade across the river.', physical=True,
                  narrative='Cold water rushes around your legs.'),
               _a('drink_from', 'Drink from the river.', narrative='The water is cold.')),
              {'deep': {'depth_m': 3.0}, 'shallow': {'depth_m': 0.3},
               'fast': {'current': 0.9}, 'raging': {'current': 1.0, 'depth_m': 2.5}}),
    Component('cliff', 'terrain', ('ledge', 'precipice'), {'height_m': 20.0}, (),
              (_a('climb_down', 'Climb down the cliff.', physical=True,
                  narrative='You climb down slowly.'),), {}),
    Component('forest', 'terrain', ('woods',), {'dense': False}, (),
              (_a('enter', 'Walk into the forest.', physical=True,
                  narrative='The trees close around you.'),), {'dense': {'dense': True}}),
    # hazard
    Component('fire', 'hazard', ('flames', 'blaze'), {'burning': True}, ('burns', 'spreads'),
              (_a('extinguish', 'Put out the fire.', requires={'burning': True},
                  sets={'burning': False}, physical=True, narrative='The fire dies.'),), {}),
    Component('trap', 'hazard', ('pit', 'snare'), {'armed': True}, ('injures',),
              (_a('disarm', 'Disarm the trap.', requires={'armed': True},
                  sets={'armed': False}, physical=True, narrative='The trap snaps shut, '
                  'harmless.'),), {}),
    Component('button', 'hazard', ('lever', 'switch'), {'pressed': False},
              ('triggers something',),
              (_a('press', 'Press it.', sets={'pressed': True}, physical=True,
                  narrative='Something clicks.'),), {}),
)

_WORD = re.compile(r"[a-z][a-z'\-]*")
_SENTENCE = re.compile(r'[^.!?;\n]+')


class ComponentIndex:
    """Seed components by name and alias."""

    def __init__(self, components: Iterable[Component] = SEED_COMPONENTS):
        self.components: dict[str, Component] = {}
        self._by_word: dict[str, str] = {}
        for c in components:
            if c.category not in CATEGORIES:
                raise ValueError(f'component {c.name!r}: unknown category {c.category!r}')
            if c.name in self.components:
                raise ValueError(f'duplicate component {c.name!r}')
            self.components[c.name] = c
            for word in (c.name,) + tuple(c.aliases):
                self._by_word.setdefault(word, c.name)
                self._by_word.setdefault(word + 's', c.name)     # plural
                if word.endswith(('s', 'x', 'ch', 'sh')):
                    self._by_word.setdefault(word + 'es', c.name)

    def __len__(self) -> int:
        return len(self.components)

    def match(self, word: str) -> Component | None:
        name = self._by_word.get(word.lower())
        return self.components[name] if name else None

    def find(self, text: str) -> list[tuple[Component, str, str]]:
        """(component, the phrase as written, its sentence) for each component mentioned."""
        found: dict[str, tuple[Component, str, str]] = {}
        sentences = [s.strip() for s in _SENTENCE.findall(text.lower()) if s.strip()]
        for k, sentence in enumerate(sentences):
            words = _WORD.findall(sentence)
            # "A door. It is locked.": a following sentence about "it" describes it too.
            context = sentence
            if k + 1 < len(sentences) and sentences[k + 1].split(' ', 1)[0] in ('it', 'its'):
                context += '. ' + sentences[k + 1]
            for i, word in enumerate(words):
                comp = self.match(word)
                if comp is None or comp.name in found:
                    continue
                start = i
                while start > 0 and i - start < 2 and words[start - 1] not in _STOP:
                    start -= 1
                found[comp.name] = (comp, ' '.join(words[start:i + 1]), context)
        return list(found.values())


_STOP = frozenset('a an the this that these those your my his her its their some of to in on '
                  'at by with and or is are was were be it you i he she they we there'.split())


@dataclass
class SceneEntity:
    """A live entity of the scene."""

    entity_id: str
    component: Component
    phrase: str
    sensors: dict

    def public_sensors(self) -> dict:
        return {k: v for k, v in self.sensors.items() if k != 'secret'}

    def describe(self) -> str:
        caps = ', '.join(self.component.capabilities) or 'nothing notable'
        return (f'[SCENE] {self.entity_id} ({self.phrase}; {self.component.category}): '
                f'{caps} - observed (not callable)')


_DENY = frozenset({'not', "n't", 'never', 'no', 'cannot', "won't", "doesn't", "isn't"})


def _lemma(word: str) -> str:
    """A word without its inflection ('dozing', 'dozes', 'dozed' -> 'doz')."""
    for suffix in ('ing', 'es', 'ed', 's', 'e'):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[:-len(suffix)]
    return word


def initial_sensors(component: Component, sentence: str,
                    overrides: Mapping[str, Any] | None = None) -> dict:
    """The component's sensors, set by state words of its sentence, then by overrides."""
    sensors = dict(component.sensors)
    tokens = _WORD.findall(sentence.lower())
    # A state word the sentence denies says nothing ("the gate will not open").
    words = {w for i, w in enumerate(tokens)
             if not _DENY & set(tokens[max(0, i - 2):i]) and not w.endswith("n't")}
    # Another inflection of a state word says the same state ("dozes" is "dozing"); a bare
    # word is no inflection of one ("its lock" does not say "locked").
    inflected = {_lemma(w) for w in words if _lemma(w) != w}
    for word, values in component.states.items():
        if word in words or _lemma(word) != word and _lemma(word) in inflected:
            sensors.update(values)
    sensors.update(dict(overrides or {}))
    return sensors
