"""IDLE-2: the intent contract. Only `[GOAL: action target amount]` can become a task.

Everything else the model says ("maybe I should look at the door", verbs, plans, lists) is
thought: it may be stored, it never creates a task. The parser is strict: exactly one tag,
exactly that form (upper-case GOAL, a colon, one space between parts, a lower-case
snake_case action and target, a positive integer amount); a malformed or second tag turns the
whole output into thought, with the reason kept for provenance.

`require_explicit_goal_tag=False` relaxes only the tag's spelling (any case, loose spacing,
amount optional, default 1). There is deliberately no path from free text to a task: that
path is what IDLE-2 forbids.

For constrained generation the same form is given as a GBNF grammar (`OUTPUT_GBNF`, whose
goal rules are `GOAL_TAG_GBNF`) and as a JSON schema (`OUTPUT_JSON_SCHEMA`); constrained or
not, the output goes through this parser.
"""

from dataclasses import dataclass, field
import json
import re

ACTION_RE = r'[a-z][a-z_]{0,31}'
TARGET_RE = r'[a-z0-9][a-z0-9_]{0,47}'
AMOUNT_RE = r'[1-9][0-9]{0,3}'

_STRICT = re.compile(rf'\[GOAL: ({ACTION_RE}) ({TARGET_RE}) ({AMOUNT_RE})\]')
# ASCII only: under a Unicode IGNORECASE, 'ſ' (long s) matches [a-z] and the Kelvin sign
# matches k, so a tag that is not the contract's text would become a task.
_LENIENT = re.compile(
    rf'\[\s*goal\s*:?\s*({ACTION_RE})\s+({TARGET_RE})(?:\s+({AMOUNT_RE}))?\s*\]',
    re.I | re.A)
# Anything that looks like an attempt at a tag, well-formed or not.
_CANDIDATE = re.compile(r'\[\s*goal\b[^\]\[\n]*\]?', re.I)


class IntentError(ValueError):
    """A goal that does not fit the contract."""


@dataclass(frozen=True)
class Intent:
    """A committed goal: what a [GOAL: ...] tag says."""

    action: str
    target: str
    amount: int = 1

    def __post_init__(self):
        if not re.fullmatch(ACTION_RE, self.action or ''):
            raise IntentError(f'bad action {self.action!r}')
        if not re.fullmatch(TARGET_RE, self.target or ''):
            raise IntentError(f'bad target {self.target!r}')
        if not isinstance(self.amount, int) or not 1 <= self.amount <= 9999:
            raise IntentError(f'bad amount {self.amount!r}')

    @property
    def goal(self) -> str:
        """The Task.goal text: 'action target amount'."""
        return f'{self.action} {self.target} {self.amount}'

    @property
    def tag(self) -> str:
        return f'[GOAL: {self.goal}]'

    @classmethod
    def from_goal(cls, goal: str) -> 'Intent':
        parts = str(goal).split(' ')
        if len(parts) != 3 or not re.fullmatch(AMOUNT_RE, parts[2]):
            raise IntentError(f'goal must be "action target amount", got {goal!r}')
        return cls(parts[0], parts[1], int(parts[2]))


@dataclass(frozen=True)
class ParsedOutput:
    """The model's output split into thought and (at most one) intent."""

    thought: str
    intent: Intent | None
    tags_found: int = 0
    rejected: tuple = field(default=())   # tag-like texts that did not fit the contract
    reason: str = ''                      # why there is no intent although tags were found


def parse_output(text: str, require_explicit_goal_tag: bool = True,
                 allowed_actions=()) -> ParsedOutput:
    """Split `text` into thought and intent under the contract. With `allowed_actions`, a
    tag whose action the robot cannot execute is rejected too (a base model echoes the
    contract's own words, '[GOAL: action target 1]')."""
    if not isinstance(text, str):
        raise TypeError(f'model output must be a string, not {type(text).__name__}')
    text = _clean(text)
    candidates = _CANDIDATE.findall(text)
    thought = ' '.join(_CANDIDATE.sub(' ', text).split())
    if not candidates:
        return ParsedOutput(thought, None)
    pattern = _STRICT if require_explicit_goal_tag else _LENIENT
    intents, rejected = [], []
    for candidate in candidates:
        m = pattern.fullmatch(candidate.strip())
        if m is None:
            rejected.append(candidate)
        else:
            action, target, amount = m.group(1), m.group(2), m.group(3)
            if not require_explicit_goal_tag:
                action, target = action.lower(), target.lower()
            try:
                intents.append(Intent(action, target, int(amount or 1)))
            except IntentError:     # the patterns and Intent agree; this keeps it so
                rejected.append(candidate)
    if rejected:
        return ParsedOutput(thought, None, len(candidates), tuple(rejected), 'malformed_tag')
    if allowed_actions and any(i.action not in allowed_actions for i in intents):
        return ParsedOutput(thought, None, len(candidates),
                            tuple(i.tag for i in intents), 'unknown_action')
    if len(intents) > 1:
        return ParsedOutput(thought, None, len(candidates), (), 'multiple_tags')
    return ParsedOutput(thought, intents[0], 1)


# Constrained output --------------------------------------------------------------------

def _check_actions(actions) -> tuple:
    actions = tuple(actions)
    for a in actions:
        if not re.fullmatch(ACTION_RE, a):
            raise IntentError(f'bad action name {a!r}')
    return actions


def output_gbnf(actions=()) -> str:
    """OUTPUT_GBNF, with the action limited to `actions` when given."""
    actions = _check_actions(actions)
    if not actions:
        return OUTPUT_GBNF
    alternatives = ' | '.join(f'"{a}"' for a in actions)
    return re.sub(r'^goal-action ::= .*$', f'goal-action ::= {alternatives}', OUTPUT_GBNF,
                  flags=re.M)


def output_json_schema(actions=()) -> dict:
    """OUTPUT_JSON_SCHEMA, with the action limited to `actions` when given."""
    actions = _check_actions(actions)
    schema = json.loads(json.dumps(OUTPUT_JSON_SCHEMA))
    if actions:
        goal = schema['properties']['goal']['anyOf'][1]
        goal['properties']['action'] = {'type': 'string', 'enum': list(actions)}
    return schema


GOAL_TAG_GBNF = (
    'goal ::= "[GOAL: " goal-action " " goal-target " " goal-amount "]"\n'
    'goal-action ::= [a-z] [a-z_]{0,31}\n'
    'goal-target ::= [a-z0-9] [a-z0-9_]{0,47}\n'
    'goal-amount ::= [1-9] [0-9]{0,3}\n'
)

# A thought on one line, optionally followed by exactly one tag.
OUTPUT_GBNF = (
    'root ::= thought (" " goal)?\n'
    'thought ::= [^\\[\\]\\n] [^\\[\\]\\n]*\n'
    + GOAL_TAG_GBNF
)

OUTPUT_JSON_SCHEMA = {
    'type': 'object',
    'properties': {
        'thought': {'type': 'string', 'maxLength': 400},
        'goal': {'anyOf': [
            {'type': 'null'},
            {'type': 'object',
             'properties': {
                 'action': {'type': 'string', 'pattern': f'^{ACTION_RE}$'},
                 'target': {'type': 'string', 'pattern': f'^{TARGET_RE}$'},
                 'amount': {'type': 'integer', 'minimum': 1, 'maximum': 9999}},
             'required': ['action', 'target', 'amount'],
             'additionalProperties': False},
        ]},
    },
    'required': ['thought', 'goal'],
    'additionalProperties': False,
}


def _clean(text: str) -> str:
    """`text` with lone surrogates as U+FFFD (no message can carry them as UTF-8)."""
    try:
        text.encode('utf-8')
    except UnicodeEncodeError:
        return text.encode('utf-16', 'surrogatepass').decode('utf-16', 'replace')
    return text


def text_from_json_output(text: str) -> str | None:
    """The JSON form of an output as tag text ('thought [GOAL: ...]'); None when it is not
    JSON of the schema's shape (the caller then parses the raw text, which is thought).
    No input raises: JSON nested past the parser's depth or an integer past Python's
    conversion limit is 'not JSON' too."""
    if not isinstance(text, str):
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):    # JSONDecodeError is a ValueError
        return None
    if not isinstance(data, dict) or not isinstance(data.get('thought'), str):
        return None
    out = data['thought'].replace('[', '(').replace(']', ')')   # no tags smuggled in thought
    goal = data.get('goal')
    if isinstance(goal, dict):
        parts = [goal.get('action'), goal.get('target'), goal.get('amount')]
        if not all(isinstance(p, (str, int)) and not isinstance(p, bool) for p in parts):
            parts = ['malformed']     # a tag the parser rejects: the output stays thought
        out += ' [GOAL: ' + ' '.join(str(p)[:64] for p in parts) + ']'
    return _clean(out)
