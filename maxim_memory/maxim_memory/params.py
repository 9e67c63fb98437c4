"""The memory node's parameters: their names, defaults, descriptions and ranges, and the
frozen config they are read into (once, at configure: all are read-only). Plain Python: the
node declares the table with maxim_common.params."""

from dataclasses import dataclass

from maxim_memory.hub import HubConfig


@dataclass(frozen=True)
class MemoryNodeConfig:
    db_path: str = '~/.maxim/memory.db'
    synchronous: str = 'FULL'
    hippocampus_capacity: int = 100_000
    atl_capacity: int = 20_000
    ag_capacity: int = 20_000
    context_budget_s: float = 0.05
    max_results: int = 50
    state_flush_every: int = 20
    embedder: str = 'sentence'
    embedding_model_path: str = ''
    write_budget_s: float = 5.0
    recover_corrupt: bool = True

    def hub_config(self) -> HubConfig:
        return HubConfig(db_path=self.db_path, synchronous=self.synchronous,
                         write_budget_s=self.write_budget_s,
                         hippocampus_capacity=self.hippocampus_capacity,
                         atl_capacity=self.atl_capacity, ag_capacity=self.ag_capacity,
                         context_budget_s=self.context_budget_s, max_results=self.max_results,
                         state_flush_every=self.state_flush_every,
                         recover_corrupt=self.recover_corrupt)


# name: (default, description, (low, high) range or None)
PARAMS = {
    'db_path': ('~/.maxim/memory.db', 'SQLite memory database (created if absent)', None),
    'synchronous': ('FULL', 'FULL: a capture is durable on return; NORMAL: survives a crash '
                    'of the process, may lose the last captures on power loss', None),
    'recover_corrupt': (True, 'A corrupt database is moved aside and a fresh one started; '
                        'false: configure fails and says where the file was moved (the next '
                        'configure starts fresh)', None),
    'capacity.hippocampus': (100_000, 'Most episodes kept (0 = unbounded)', (0, 10_000_000)),
    'capacity.atl': (20_000, 'Most concepts kept (0 = unbounded)', (0, 10_000_000)),
    'capacity.angular_gyrus': (20_000, 'Most math records kept (0 = unbounded)',
                               (0, 10_000_000)),
    'budgets.context_s': (0.05, 'Time budget of the concept context builder, seconds',
                          (0.001, 10.0)),
    'budgets.max_results': (50, 'Hard cap on the items any query returns', (1, 1000)),
    'budgets.state_flush_every': (20, 'Snapshot NAc/SCN/pain state every N captures',
                                  (0, 100_000)),
    'budgets.write_s': (5.0, 'A busy database is retried this long (s); then the capture '
                        'goes to the journal beside it', (0.0, 60.0)),
    'embedding.backend': ('sentence', "'sentence' (all-MiniLM-L6-v2, offline; falls back to "
                          "'hashing' with a warning when its package is missing), 'hashing' "
                          "(word hashing, instant, matches words not meaning) or 'llama' (the "
                          'GGUF model)', None),
    'embedding.model_path': ('', "'sentence': another model.zip ('' = the installed "
                             "package's); 'llama': a GGUF ('' = the embedded gemma-3-270m, "
                             'assembled into the model cache on first use)', None),
}


def read_config(value) -> MemoryNodeConfig:
    """The config from `value(name)`, a declared parameter's value."""
    return MemoryNodeConfig(
        db_path=value('db_path'), synchronous=value('synchronous'),
        recover_corrupt=bool(value('recover_corrupt')),
        hippocampus_capacity=value('capacity.hippocampus'),
        atl_capacity=value('capacity.atl'), ag_capacity=value('capacity.angular_gyrus'),
        context_budget_s=value('budgets.context_s'), max_results=value('budgets.max_results'),
        state_flush_every=value('budgets.state_flush_every'),
        write_budget_s=value('budgets.write_s'), embedder=value('embedding.backend'),
        embedding_model_path=value('embedding.model_path'))
