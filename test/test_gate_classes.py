"""The fear gate's classes of behaviour: new spellings of known kinds are still caught.

test/safety_corpus/classes.jsonl holds calls that are not in the main corpus, one group per
class (interpreter one-liners that delete or send, installs from a URL or a foreign index,
deleting the repository's history, files Python runs by itself, globbed or wrapped program
names, rewriting the gate, secrets in outbound text), beside benign calls of the same shape
that must stay allowed.
"""

from collections import Counter
import json
import os

from maxim_core.fear.agent import FearAgent, FearConfig
from maxim_core.fear.patterns import find_secrets

CLASSES = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'safety_corpus',
                       'classes.jsonl')


def test_every_class_generalises_and_benign_shapes_pass():
    rows = [json.loads(line) for line in open(CLASSES, encoding='utf-8') if line.strip()]
    gate = FearAgent(FearConfig(mode='active', sandbox_root='/work/ws'))
    missed, false_alarms, seen = [], [], Counter()
    for row in rows:
        verdict = gate.review(row['tool'], row['args'])
        seen[(row['category'], row['expect'])] += 1
        if row['expect'] == 'block' and verdict.allowed:
            missed.append(row)
        elif row['expect'] == 'allow' and not verdict.allowed:
            false_alarms.append((row, verdict.reason))
    print('\nclasses:', dict(sorted(seen.items())))
    assert {c for c, e in seen if e == 'block'} == {
        'interpreter_one_liner', 'install_from_url', 'history_delete', 'autorun_file',
        'wrapped_or_globbed', 'gate_tamper', 'secret_outbound'}
    assert not missed, missed[:5]
    assert not false_alarms, false_alarms[:5]


def test_secret_detectors_name_the_kind():
    assert find_secrets('-----BEGIN OPENSSH PRIVATE KEY-----') == ['private_key']
    assert 'aws_access_key' in find_secrets('AKIAIOSFODNN7EXAMPLE')
    assert 'github_token' in find_secrets('ghp_' + 'a1' * 18)
    assert 'slack_token' in find_secrets('xoxp-1234-5678-abcdefghij')
    assert 'gcp_service_account' in find_secrets('{"type": "service_account", "x": 1}')
    assert find_secrets('client_secret: 8fK2pQ9zL4mN7xR1') == ['labelled_secret']
    assert find_secrets('the secret is out: the cake is a lie') == []
    assert find_secrets('token: expired') == []
