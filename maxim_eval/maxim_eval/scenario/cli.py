"""`python -m maxim_eval.scenario.cli`: run simulation scenarios.

  run <scenario.yaml | shipped name> [--live] [--out report.json] [--record replay.yaml]
  suite [names...] [--live] [--seeds 1 2] [--out-dir DIR]   (all shipped scenarios by default)
  list
  agent <scenario> [--steps N]              (the model orchestrates the scenario's goal)
  generate "<description>" --out-dir DIR      (needs the model)

Scripted runs replay the scenario's script on simulated time (no waiting); --live runs the
AUT and the judge on the embedded model (or --model PATH) with the real clock. Exit status:
0 pass, 1 fail, 2 error. `suite` runs several scenarios (live: once per seed) and writes
suite.json and suite.md saying which pass and which fail and why; its exit status is 0 when
every run passed, 1 when some failed with a stated reason, 2 when a run could not complete.
"""

import argparse
import json
import os
import sys
import time

from maxim_eval.scenario.bridge import VirtualClock
from maxim_eval.scenario.scenario import (all_scenarios, find_scenario, generate_scenario,
                                          run_scenario, run_suite, ScenarioError, suite_summary)


def load_backend(model_path: str = '', n_ctx: int = 2048, threads: int = 2):
    """The real model: LlamaCppBackend on `model_path` or on the embedded GGUF."""
    from maxim_core.llm.llama import LlamaCppBackend
    from maxim_core.llm.model import resolve_model
    return LlamaCppBackend(resolve_model(model_path), n_ctx=n_ctx, n_threads=threads)


ORCHESTRATOR_RESPONSE_FORMAT = (
    'Answer with one JSON object and nothing else, for example:\n'
    '{"reasoning": "I start the test by talking to the agent.", "ready_to_act": true, '
    '"action": {"tool": "send_message", "args": {"text": "Hello, who are you?"}}}\n'
    'Use one of your tools each time; call finish_simulation when the goal is judged.')


def _lean_grammar():
    from maxim_core.llm.grammar import deliberation_grammar
    return deliberation_grammar


def cmd_run(args) -> int:
    scenario = find_scenario(args.scenario)
    overrides = {}
    if args.settle is not None:
        overrides['settle_s'] = args.settle
    if args.max_tokens is not None:
        overrides['max_tokens'] = args.max_tokens
    if args.seed is not None:
        overrides['seed'] = args.seed
    if args.live:
        backend = load_backend(args.model, args.n_ctx)
        try:
            report = run_scenario(scenario, backend, live=True, aut_overrides=overrides,
                                  grammar_for=_lean_grammar(), memory=args.memory,
                                  worlds=args.worlds)
        finally:
            backend.close()
    else:
        clock = VirtualClock()
        report = run_scenario(scenario, aut_overrides=overrides, clock=clock,
                              sleep=clock.sleep, memory=args.memory, worlds=args.worlds)
    print(report.summary())
    if args.out:
        with open(args.out, 'w', encoding='utf-8') as f:
            f.write(report.to_json())
        print(f'report: {args.out}')
    if args.record:
        scenario.script = list(report.recorded_script)
        scenario.scores = list(report.recorded_scores)
        with open(args.record, 'w', encoding='utf-8') as f:
            f.write(scenario.dump())
        print(f'replayable scenario: {args.record}')
    return 0 if report.passed else 1


def cmd_suite(args) -> int:
    """Every shipped scenario (or the named ones): which pass, which fail, and why."""
    overrides = {}
    if args.settle is not None:
        overrides['settle_s'] = args.settle
    if args.max_tokens is not None:
        overrides['max_tokens'] = args.max_tokens
    if args.timeout is not None:
        overrides['timeout_s'] = args.timeout
    if args.llm_timeout is not None:
        overrides['llm_timeout_s'] = args.llm_timeout
    if args.max_actions is not None:
        overrides['max_actions_per_turn'] = args.max_actions

    def progress(run: dict) -> None:
        seed = '' if run['seed'] is None else f' seed {run["seed"]}'
        print(f'{run["scenario"]}{seed}: {run["status"].upper()} '
              f'({run["duration_s"]:.0f} s) {"; ".join(run["unmet"] + run["violations"])}',
              flush=True)

    backend = load_backend(args.model, args.n_ctx) if args.live else None
    try:
        suite = run_suite(args.names or None, backend, live=args.live, seeds=args.seeds,
                          aut_overrides=overrides,
                          grammar_for=_lean_grammar() if args.live else None,
                          llm_analysis=args.llm_analysis, on_run=progress,
                          memory=args.memory, worlds=args.worlds)
    finally:
        if backend is not None:
            backend.close()
    if args.live:
        from maxim_core.llm.model import resolve_model
        suite['model'] = os.path.basename(resolve_model(args.model))
    text = suite_summary(suite)
    print(text)
    if args.out_dir:
        os.makedirs(args.out_dir, exist_ok=True)
        with open(os.path.join(args.out_dir, 'suite.json'), 'w', encoding='utf-8') as f:
            json.dump(suite, f, indent=2, default=str)
        with open(os.path.join(args.out_dir, 'suite.md'), 'w', encoding='utf-8') as f:
            f.write(text)
        print(f'report: {os.path.join(args.out_dir, "suite.md")}')
    if suite['errors']:
        return 2
    return 0 if suite['failed'] == 0 else 1


def cmd_agent(args) -> int:
    """The orchestrator as an agent: the model drives the orchestrator tools toward the
    scenario's goal (its turns are not used), then the session is analysed."""
    from maxim_core.deliberation.cycles import DeliberationConfig, Deliberator
    from maxim_core.prompt.builder import identity_section, PromptBuilder
    from maxim_core.llm.grammar import deliberation_grammar
    from maxim_eval.scenario.orchestrator import (grammar_subset, OrchestratorAgent,
                                                  SimulationSession)
    from maxim_eval.scenario.scenario import aut_factory
    scenario = find_scenario(args.scenario)
    backend = load_backend(args.model, args.n_ctx)
    try:
        overrides = {'settle_s': args.settle} if args.settle is not None else {}
        make_aut = aut_factory(scenario, backend, overrides, _lean_grammar(),
                               memory=args.memory, worlds=args.worlds)
        session = SimulationSession(
            make_aut, scenario.goal,
            backend, criteria_check=lambda acts: scenario.criteria.check(acts),
            generate=generate_scenario)
        builder = PromptBuilder(lambda t: len(backend.tokenize(t)), identity=identity_section(
            body='the orchestrator of a simulation that tests another agent'),
            response_format=ORCHESTRATOR_RESPONSE_FORMAT)
        deliberator = Deliberator(
            backend, builder, config=DeliberationConfig(max_cycles=1,
                                                        max_tokens=args.max_tokens or 160),
            grammar_for=lambda schemas: deliberation_grammar(grammar_subset(schemas)))
        agent = OrchestratorAgent(session, deliberator, max_steps=args.steps)
        out = agent.run()
    finally:
        backend.close()
    for step in out['steps']:
        print(f'- {step["status"]}: {step["tool"]} '
              f'{json.dumps(step.get("args", {}))[:100]} -> {step.get("success")}')
    finished = out['finished']
    print(f'finished: {finished["reason"]}')
    print(json.dumps(finished['analysis'], indent=1, default=str)[:3000])
    compliance = finished['analysis'].get('compliance', {})
    return 0 if compliance.get('passed') else 1


def cmd_list(args) -> int:
    for name, path in all_scenarios().items():
        s = find_scenario(path)
        print(f'{name:22s} {s.world:6s} {s.goal}')
    return 0


def cmd_generate(args) -> int:
    from maxim_eval.scenario.orchestrator import Judge
    backend = load_backend(args.model, args.n_ctx)
    try:
        scenario, text = generate_scenario(args.description, Judge(backend, retries=1))
    finally:
        backend.close()
    print(text)
    if args.out_dir:
        print(f'written: {scenario.save(args.out_dir)}')
    return 0


def main(argv=None, memory=None, worlds=None) -> int:
    """`memory(name)` gives each agent under test a port of the robot's memory system
    (`maxim scenario` composes one over the memory node); without it each has only its
    session memory. `worlds` maps a world kind to the factory of its agents under test
    (`maxim scenario` gives the robot world); the suite then runs those scenarios too."""
    parser = argparse.ArgumentParser(prog='python -m maxim_eval.scenario.cli',
                                     description='Run Maxim simulation scenarios.')
    sub = parser.add_subparsers(dest='command', required=True)
    run = sub.add_parser('run', help='run a scenario (scripted replay unless --live)')
    run.add_argument('scenario', help='a scenario YAML file or a shipped scenario name')
    run.add_argument('--live', action='store_true', help='use the real model')
    run.add_argument('--out', help='write the JSON report here')
    run.add_argument('--record', help='write the scenario with the recorded script here')
    run.add_argument('--model', default='', help='GGUF file (default: the embedded model)')
    run.add_argument('--n-ctx', type=int, default=2048)
    run.add_argument('--settle', type=float, default=None, help='settle time in seconds')
    run.add_argument('--max-tokens', type=int, default=None, help='per AUT answer')
    run.add_argument('--seed', type=int, default=None, help='sampling seed (live)')
    run.set_defaults(func=cmd_run)
    suite = sub.add_parser('suite', help='run every shipped scenario (or those named) and '
                           'report which pass and which fail')
    suite.add_argument('names', nargs='*', help='scenario names or files (default: all shipped)')
    suite.add_argument('--live', action='store_true', help='use the real model')
    suite.add_argument('--seeds', type=int, nargs='+', default=[1],
                       help='live: run each scenario once per seed (default: 1)')
    suite.add_argument('--out-dir', default='', help='write suite.json and suite.md here')
    suite.add_argument('--model', default='', help='GGUF file (default: the embedded model)')
    suite.add_argument('--n-ctx', type=int, default=2048)
    suite.add_argument('--settle', type=float, default=None, help='settle time in seconds')
    suite.add_argument('--timeout', type=float, default=None, help='per message, seconds')
    suite.add_argument('--llm-timeout', type=float, default=None,
                       help='per model call, seconds (raise it on a busy machine)')
    suite.add_argument('--max-tokens', type=int, default=None, help='per AUT answer')
    suite.add_argument('--max-actions', type=int, default=None,
                       help="actions per turn at most (default: each scenario's own)")
    suite.add_argument('--llm-analysis', action='store_true',
                       help="add the judge model's summary to each analysis (slower)")
    suite.set_defaults(func=cmd_suite)
    agent = sub.add_parser('agent', help="let the model orchestrate a scenario's goal")
    agent.add_argument('scenario')
    agent.add_argument('--model', default='')
    agent.add_argument('--n-ctx', type=int, default=2048)
    agent.add_argument('--steps', type=int, default=6)
    agent.add_argument('--settle', type=float, default=None)
    agent.add_argument('--max-tokens', type=int, default=None)
    agent.set_defaults(func=cmd_agent)
    lst = sub.add_parser('list', help='list the shipped scenarios')
    lst.set_defaults(func=cmd_list)
    gen = sub.add_parser('generate', help='write a scenario from a description (model)')
    gen.add_argument('description')
    gen.add_argument('--out-dir', default='')
    gen.add_argument('--model', default='')
    gen.add_argument('--n-ctx', type=int, default=2048)
    gen.set_defaults(func=cmd_generate)
    args = parser.parse_args(argv)
    args.memory = memory
    args.worlds = worlds
    t0 = time.monotonic()
    try:
        code = args.func(args)
    except (ScenarioError, ValueError, OSError) as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    except RuntimeError as exc:     # LLMError, model file errors
        print(f'error: {type(exc).__name__}: {exc}', file=sys.stderr)
        return 2
    if getattr(args, 'out', None) is None and args.command == 'run':
        print(json.dumps({'elapsed_s': round(time.monotonic() - t0, 1)}))
    return code


if __name__ == '__main__':
    sys.exit(main())
