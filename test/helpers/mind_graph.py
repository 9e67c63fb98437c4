"""The robot's mind on a real node graph in one process: memory, fear, llm and agent nodes
over DDS, and a probe that sends percepts and waits for what comes back."""

import json
import threading
import time
import uuid

WAIT_S = 90.0                          # per step, generous for a loaded 2-core machine


def decision(reasoning, tool=None, args=None):
    """A scripted deliberation answer."""
    action = None if tool is None else {'tool': tool, 'args': args or {}}
    return json.dumps({'reasoning': reasoning, 'ready_to_act': True, 'action': action})


class Graph:
    """memory + fear + llm + agent in one process, and a probe that drives and listens."""

    def __init__(self, tmp_path, backend=None, llm_params=None, agent_params=None,
                 tools=(), notes=None):
        import rclpy
        from rclpy.executors import MultiThreadedExecutor
        from rclpy.parameter import Parameter

        from maxim_core.nodes.agent_node import AgentNode
        from maxim_core.nodes.fear_node import FearNode
        from maxim_core.nodes.llm_node import LLMNode
        from maxim_interfaces.msg import Episode, PainSignal, Percept, ToolResult
        from maxim_interfaces.srv import PainHistory, PredictOutcome, SystemStats
        from maxim_memory.nodes.memory_node import MemoryNode

        def params(d):
            return [Parameter(k, value=v) for k, v in d.items()]

        self.workspace = tmp_path / 'workspace'
        (self.workspace / 'notes').mkdir(parents=True)
        for path, text in (notes or {}).items():
            (self.workspace / path).write_text(text)
        self.ctx = rclpy.Context()
        rclpy.init(context=self.ctx)
        self.nodes = []
        self.executor = MultiThreadedExecutor(num_threads=6, context=self.ctx)
        try:
            memory = self._add(MemoryNode(context=self.ctx, autostart=True,
                                          parameter_overrides=params(
                                              {'db_path': str(tmp_path / 'memory.db')})))
            assert memory.hub is not None, memory.last_error
            # A generous bound on memory's answer: on a loaded machine a late answer would
            # skip the NAc layer, and this test is about what the layer decides.
            self._add(FearNode(context=self.ctx, parameter_overrides=params(
                {'mode': 'passive', 'sandbox.root': str(self.workspace),
                 'nac.timeout_s': 10.0})))
            llm = LLMNode(context=self.ctx, backend=backend,
                          parameter_overrides=params(llm_params or {}))
            for step in (llm.trigger_configure, llm.trigger_activate):
                step()
            assert llm.last_error == '', llm.last_error
            self._add(llm)
            self.agent = self._add(AgentNode(context=self.ctx, autostart=True,
                                             parameter_overrides=params({
                                                 'workspace_root': str(self.workspace),
                                                 'tools.active': list(tools),
                                                 'deliberation.max_cycles': 1,
                                                 'deliberation.llm_timeout_s': 60.0,
                                                 'idle.enabled': False,
                                                 'idle.task_db_path': str(tmp_path / 'tasks.db'),
                                                 **(agent_params or {})})))
            assert self.agent.mind is not None, self.agent.last_error
            self.probe = self._add(rclpy.create_node('probe', context=self.ctx))
        except BaseException:
            self.close()
            raise
        self.results, self.episodes, self.pains = [], [], []
        self.probe.create_subscription(ToolResult, 'tool_results', self.results.append, 100)
        self.probe.create_subscription(Episode, 'episodes', self.episodes.append, 100)
        self.probe.create_subscription(PainSignal, 'pain', self.pains.append, 100)
        self._percepts = self.probe.create_publisher(Percept, 'percepts', 10)
        self._predict = self.probe.create_client(PredictOutcome, 'memory/predict_outcome')
        self._stats = self.probe.create_client(SystemStats, 'memory/system_stats')
        self._pain = self.probe.create_client(PainHistory, 'memory/pain_history')
        self.Percept, self.PredictOutcome = Percept, PredictOutcome
        self.SystemStats, self.PainHistory = SystemStats, PainHistory
        self._closing = threading.Event()
        self.spin_errors: list[str] = []
        self._spinner = threading.Thread(target=self._spin, daemon=True)
        self._spinner.start()

    def _spin(self):
        """Spin as the nodes' own `lifetime.run` does: a callback that raised (rclpy hands
        it back here; e.g. an action client given the same goal response twice) is counted
        and the graph spins on; ten of them end it."""
        from rclpy.executors import ExternalShutdownException, ShutdownException
        while not self._closing.is_set() and self.ctx.ok():
            try:
                self.executor.spin_once(timeout_sec=0.1)
            except (ExternalShutdownException, ShutdownException):
                return
            except RuntimeError as exc:
                self.spin_errors.append(str(exc))
                if len(self.spin_errors) >= 10:
                    raise

    def _add(self, node):
        self.nodes.append(node)
        self.executor.add_node(node)
        return node

    def close(self):
        """Stop the graph as the in-process runner and a node's lifetime do: every node
        quiesces while the executor still spins (the agent's threads end, the llm node's
        queue closes and its goals end with their results set), then the spin loop ends and
        the callbacks it started finish, then the executor shuts down and the nodes are
        destroyed. A goal still running when the executor is shut down sets its result on it
        later, and rclpy fails inside its own done callbacks ('never retrieved' lines at
        exit)."""
        import rclpy
        try:
            for node in reversed(self.nodes):
                quiesce = getattr(node, 'quiesce', None)
                if callable(quiesce):
                    quiesce()
        finally:
            closing = getattr(self, '_closing', None)
            if closing is not None:
                closing.set()
            spinner = getattr(self, '_spinner', None)
            if spinner is not None:
                spinner.join(timeout=10.0)
            # rclpy's shutdown() does not wait for the callbacks its thread pool has yet to
            # run (the wait is unreachable in Jazzy's Executor.shutdown), and one that starts
            # after it fails on the executor's destroyed guard condition. The spin loop has
            # ended: the handlers it handed to the pool are all there is.
            handed = list(getattr(self.executor, '_futures', ()))
            deadline = time.monotonic() + 5.0
            while not all(h.done() for h in handed) and time.monotonic() < deadline:
                time.sleep(0.02)
            self.executor.shutdown(timeout_sec=5.0)
            for node in reversed(self.nodes):
                node.destroy_node()
            rclpy.try_shutdown(context=self.ctx)

    # -- driving -----------------------------------------------------------------------------
    def until(self, condition, what, timeout_s=WAIT_S):
        deadline = time.monotonic() + timeout_s
        while not condition():
            assert time.monotonic() < deadline, f'timed out waiting for {what}'
            time.sleep(0.05)

    def ask(self, client, request):
        assert client.wait_for_service(timeout_sec=WAIT_S), f'{client.srv_name} is absent'
        future = client.call_async(request)
        self.until(future.done, client.srv_name)
        return future.result()

    def say(self, narrative, objects=()) -> str:
        """A percept from the user, published; its id."""
        from maxim_interfaces.msg import Detection
        pid = uuid.uuid4().hex[:8]
        self._percepts.publish(self.Percept(
            percept_id=pid, source=self.Percept.SOURCE_USER, source_name='test',
            narrative=narrative, salience=0.9, novelty=0.5,
            objects=[Detection(label=label) for label in objects]))
        return pid

    def step(self, narrative, objects=()):
        """One percept through the whole loop: its tool result, once memory holds its episode
        (None when the mind chose no tool)."""
        stored = self.ask(self._stats, self.SystemStats.Request()).episodes
        results = len(self.results)
        pid = self.say(narrative, objects)

        def mine():
            return [e for e in self.episodes
                    if json.loads(e.context_json or '{}').get('percept_id') == pid]
        self.until(lambda: mine(), f'the episode of {narrative!r}')
        episode = mine()[0]
        if episode.tool_name:
            self.until(lambda: len(self.results) > results, f'the tool result of {narrative!r}')
        self.until(lambda: self.ask(self._stats, self.SystemStats.Request()).episodes > stored,
                   'memory to store the episode')
        return (self.results[-1] if episode.tool_name else None), episode

    def predict(self, tool, key):
        r = self.ask(self._predict, self.PredictOutcome.Request(tool_name=tool, context=key))
        assert r.available and r.error_code == 0, r.error_msg
        return r
