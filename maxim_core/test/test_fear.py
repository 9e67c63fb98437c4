"""FearAgent layers (pattern, LLM, NAc), fail-closed behaviour and the ToolPainBridge."""

import json
import threading

from maxim_core.fear.agent import ChannelLimit, FearAgent, FearConfig, ToolPainBridge
from maxim_core.fear.patterns import normalize_unicode, scan_call, ScanPolicy
from maxim_core.llm.backend import LLMError, ScriptedBackend, TIMEOUT

ROOT = '/work/ws'


def agent(**kw):
    backend = kw.pop('backend', None)
    predict = kw.pop('predict', None)
    return FearAgent(FearConfig(mode='active', sandbox_root=ROOT, **kw), backend, predict)


def test_pattern_layer_blocks_with_category_and_reason():
    v = agent().review('bash', {'command': 'rm -rf /'})
    assert not v.allowed and v.layer == 'pattern' and v.category == 'destructive'
    assert v.layer_code == 1 and v.risk > 0.9 and 'rm -rf /' in v.reason
    ok = agent().review('bash', {'command': 'ls -la'})
    assert ok.allowed and ok.layer == 'none' and 'NAc layer skipped' in ok.reason


def test_introspection_bypasses_and_bad_input_is_blocked():
    a = agent()
    assert a.review('memory_recall', {'query': 'rm -rf /'}).layer == 'bypass'
    assert a.review('my_query', {'q': 'rm -rf /'}, introspection=True).allowed
    assert not a.review('bash', 'not json').allowed
    assert not a.review('bash', ['x']).allowed
    assert a.review('bash', json.dumps({'command': 'pwd'})).allowed


def test_normalisation_defeats_obfuscation():
    assert normalize_unicode('rм\u200b -rf') == 'rm -rf'
    policy = ScanPolicy(ROOT, mode='active')
    for cmd in ("r''m -rf /", 'x=rm; $x -rf /', "$'\\x72\\x6d' -rf /", 'rm${IFS}-rf${IFS}/',
                'echo cm0gLXJmIC8= | base64 -d | sh', 'ｒｍ -rf /'):
        assert scan_call('bash', {'command': cmd}, policy), cmd


def test_ambiguous_without_llm_is_blocked_or_allowed_by_policy():
    cmd = {'command': 'git push --force origin main'}
    v = agent().review('bash', cmd)
    assert not v.allowed and 'no LLM review' in v.reason
    assert agent(block_ambiguous=False).review('bash', cmd).allowed


def test_llm_layer_decides_ambiguous_calls():
    cmd = {'command': 'git push --force origin main'}
    safe = ScriptedBackend(['{"safe": true, "reason": "own branch"}'])
    v = agent(llm_review=True, backend=safe).review('bash', cmd, 'rebased my branch')
    assert v.allowed and 'LLM judged' in v.reason
    assert 'git push --force' in safe.prompts[0] and safe.calls[0]['json_schema']
    unsafe = ScriptedBackend(['{"safe": false, "reason": "shared branch"}'])
    v = agent(llm_review=True, backend=unsafe).review('bash', cmd)
    assert not v.allowed and v.layer == 'llm' and 'shared branch' in v.reason
    # Clear dangers never reach the LLM.
    agent(llm_review=True, backend=unsafe).review('bash', {'command': 'rm -rf /'})
    assert len(unsafe.prompts) == 1


def test_llm_layer_fails_closed():
    cmd = {'command': 'git push --force origin main'}
    for script in (LLMError(TIMEOUT, 'slow'), 'not json', '{"safe": "yes", "reason": ""}'):
        v = agent(llm_review=True, backend=ScriptedBackend([script])).review('bash', cmd)
        assert not v.allowed and v.layer == 'fail_closed', script
    release = threading.Event()

    def stuck(prompt):
        release.wait(10.0)
        return '{"safe": true, "reason": "late"}'

    a = agent(llm_review=True, llm_timeout_s=0.2, backend=ScriptedBackend(stuck))
    try:
        v = a.review('bash', cmd)
        assert not v.allowed and v.layer == 'fail_closed' and 'did not answer' in v.reason
    finally:
        release.set()
        a.close()


def test_nac_rule_blocks_learned_bad_calls_in_their_context_only():
    table = {('move', 'kitchen'): (0.05, 0.9), ('move', 'hall'): (0.8, 0.9),
             ('speak', 'kitchen'): (0.05, 0.5)}
    a = agent(predict=lambda tool, ctx: table.get((tool, ctx)))
    v = a.review('move', {'pan': 0.1, 'tilt': 0}, 'kitchen')
    assert not v.allowed and v.layer == 'nac' and v.category == 'learned_aversion'
    assert a.review('move', {'pan': 0.1, 'tilt': 0}, 'hall').allowed
    assert a.review('speak', {'text': 'hi'}, 'kitchen').allowed     # not confident enough
    v = a.review('move', {'pan': 0.1, 'tilt': 0}, 'garden')
    assert v.allowed and 'no prediction' in v.reason


def test_the_nac_is_asked_under_the_context_key_when_one_is_given():
    asked = []
    a = agent(predict=lambda tool, key: asked.append(key) or (0.01, 0.99))
    v = a.review('move', {'pan': 0.1, 'tilt': 0}, 'The head looks at a cup.',
                 context_key='cup+table')
    assert not v.allowed and v.layer == 'nac' and "'cup+table'" in v.reason
    a.review('move', {'pan': 0.1, 'tilt': 0}, 'kitchen')
    a.review('move', {'pan': 0.1, 'tilt': 0}, 'kitchen', context_key='')
    assert asked == ['cup+table', 'kitchen', '']


def test_pain_bridge_escalates_and_feeds_nac():
    observed, pains = [], []
    bridge = ToolPainBridge(observed.append, pains.append)
    assert bridge.record('move', 'kitchen', True) is None
    bridge.record('move', 'kitchen', False, 5, 'servo stuck')
    bridge.record('move', 'kitchen', False, 6, 'timeout')
    assert [p['repeat_count'] for p in pains] == [1, 2]
    assert pains[1]['intensity'] > pains[0]['intensity'] and pains[1]['type_name'] == 'timeout'
    assert [o['success'] for o in observed] == [True, False, False]
    assert observed[1]['valence'] == -1.0 and observed[1]['tool'] == 'move'
    assert bridge.record('bash', 'x', False, 4, 'blocked') is None      # never ran
    bridge.record('move', 'kitchen', True)
    bridge.record('move', 'kitchen', False, 5, 'again')
    assert pains[-1]['repeat_count'] == 1                                # success resets


def test_nac_learning_through_the_bridge_blocks_then_spares_other_contexts():
    """A tool failing in one context is predicted bad, then blocked there only."""
    stats: dict = {}

    def observe(rec):
        n, good = stats.get((rec['tool'], rec['context']), (0, 0))
        stats[(rec['tool'], rec['context'])] = (n + 1, good + rec['success'])

    def predict(tool, ctx):
        n, good = stats.get((tool, ctx), (0, 0))
        return None if n == 0 else (good / n, 1.0 - 1.0 / (n + 1))

    a = agent(predict=predict)
    bridge = ToolPainBridge(observe)
    args = {'pan': 0.2, 'tilt': 0.0}
    verdicts = []
    for _ in range(10):
        v = a.review('move', args, 'arm blocked')
        verdicts.append(v.layer)
        if v.allowed:
            bridge.record('move', 'arm blocked', False, 5, 'servo stall')
    assert verdicts[0] == 'none' and verdicts[-1] == 'nac'
    bridge.record('move', 'open room', True)
    assert a.review('move', args, 'open room').allowed


def test_outbound_channels_are_rate_and_size_limited():
    now = [0.0]
    limits = {'send_message': ChannelLimit(calls=2, window_s=60.0, max_chars=50,
                                           window_chars=80)}
    gate = FearAgent(FearConfig(mode='active', sandbox_root=ROOT, outbound_limits=limits),
                     clock=lambda: now[0])
    msg = {'to': 'owner', 'text': 'done'}
    assert gate.review('send_message', msg).allowed
    big = gate.review('send_message', {'to': 'owner', 'text': 'x' * 60})
    assert not big.allowed and 'characters in one call' in big.reason
    assert gate.review('send_message', msg).allowed
    third = gate.review('send_message', msg)
    assert not third.allowed and third.category == 'exfiltration' and '2 calls' in third.reason
    assert gate.review('respond', {'text': 'hi'}).allowed        # other channels unaffected
    now[0] = 61.0                                                # the window slid on
    assert gate.review('send_message', {'to': 'o', 'text': 'y' * 45}).allowed
    volume = gate.review('send_message', {'to': 'o', 'text': 'z' * 40})
    assert not volume.allowed and 'characters in 60 s' in volume.reason


def test_arguments_past_the_json_limits_are_blocked_not_raised():
    a = agent()
    for text in ('{"n": ' + '9' * 5000 + '}', '[' * 100_000):
        v = a.review('bash', text)
        assert not v.allowed and 'not valid JSON' in v.reason
