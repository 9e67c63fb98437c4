"""What the Mind is: its configuration, the tools active by default, memory's channels and
the systems an ablation can switch off. The agent node fills a MindConfig from its
parameters; the scenario runner from a scenario's."""

from __future__ import annotations

from dataclasses import dataclass

from maxim_core.deliberation.choice import ChoiceConfig
from maxim_core.deliberation.cycles import DeliberationConfig
from maxim_core.idle.runtime import IdleSettings
from maxim_core.prompt.builder import RESPONSE_FORMAT

# The tools active by default: looking, recalling, answering (the scene scope adds more).
DEFAULT_ACTIVE = ('move', 'track_target', 'focus_interests', 'novelty_track', 'respond',
                  'memory_recall', 'predict_outcome', 'scene_summary')

# Memory's enrichment channels (answered by memory/enrich) and the Mind's own.
MEMORY_CHANNELS = ('episodes', 'similar', 'concepts', 'knowledge', 'predictions', 'rhythms')
# Systems that can be switched off (ablation): each names what it removes.
SYSTEMS = {
    'hippocampus': 'the episodes channel',
    'ec': 'the similar-situations channel',
    'concepts': 'the concept and knowledge channels',
    'patterns': 'the pattern-prediction channel',
    'nac': 'learned tool values in the context pool',
    'scn': 'the rhythms channel',
    'cerebellum': 'the motor-program channel',
    'tool_index': 'the learned tool index (every active tool described in full)',
    'gate': 'the ThoughtGate (every percept is deliberated)',
}
CHANNEL_SYSTEM = {'episodes': 'hippocampus', 'similar': 'ec', 'concepts': 'concepts',
                  'knowledge': 'concepts', 'predictions': 'patterns', 'rhythms': 'scn'}


@dataclass(frozen=True)
class MindConfig:
    """What the Mind is (the agent node fills it from its parameters)."""

    mode: str = 'passive'
    simulation: bool = True
    interactive: bool = False
    goal: str = ''
    workspace_root: str = '.'
    active_tools: tuple = DEFAULT_ACTIVE
    active_cap: int = 12
    percept_min_salience: float = 0.3
    deliberation: DeliberationConfig = DeliberationConfig()
    use_grammar: bool = True
    enrichment_budget_s: float = 1.5
    memory_timeout_s: float = 1.0
    energy_token_budget: int = 24000
    energy_refill_tokens_per_s: float = 150.0
    tool_index_path: str = ''              # '' = learned in memory only
    tool_process: str = 'bwrap'            # how tools start processes: bwrap | python
    tool_network: bool = False             # may those processes reach the network
    tool_hidden: tuple = ()                # paths their sandbox hides (e.g. the memory db)
    name: str = 'Maxim'
    body: str = 'a robot head with a camera that can pan and tilt'
    response_format: str = RESPONSE_FORMAT
    run_id: str = ''
    loop_mode: str = ''                    # the episodes' mode ('' = mode)
    idle: IdleSettings | None = None
    systems_off: frozenset = frozenset()
    # How a cycle decides: 'choose' among grounded candidates scored by the model (SayCan),
    # 'generate' a JSON answer under a grammar, or 'auto': choose when the model can score.
    decision: str = 'auto'
    choice: ChoiceConfig = ChoiceConfig()

    def __post_init__(self):
        if self.decision not in ('auto', 'choose', 'generate'):
            raise ValueError(f'decision must be auto, choose or generate, not '
                             f'{self.decision!r}')
        unknown = set(self.systems_off) - set(SYSTEMS)
        if unknown:
            raise ValueError(f'unknown systems {sorted(unknown)}; known: {sorted(SYSTEMS)}')
        if self.energy_token_budget < 0 or self.energy_refill_tokens_per_s < 0:
            raise ValueError('the energy budget and its refill cannot be negative')
        if not 0.0 <= self.percept_min_salience <= 1.0:
            raise ValueError('percept_min_salience must be within 0..1')

    def on(self, system: str) -> bool:
        return system not in self.systems_off

    def memory_channels(self) -> list[str]:
        """Memory's enrichment channels whose systems are on."""
        return [c for c in MEMORY_CHANNELS if self.on(CHANNEL_SYSTEM[c])]
