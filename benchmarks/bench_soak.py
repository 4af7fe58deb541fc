"""Benchmark: a soak of the two-arm namespaced setup at 1 kHz with faults (issue 29 item 5).

Two rnea nodes (``python -m rnea_ros.node``, namespaces /left and /right, the shipped
``config/gravity_compensation.yaml`` with command output enabled on
``<ns>/effort_controller/commands``) compute the gravity compensation of a panda
(example-robot-data) whose description they read from ``<ns>/robot_description`` (transient
local, published here).  Per arm a joint-state publisher process streams every non-mimic joint at
``--rate`` Hz on ``<ns>/joint_states`` (stamped with the wall clock; it reports what it sent,
``bench_soak_parts``).  This process is the monitor: it records every
``<ns>/rnea/joint_efforts`` answer and every command, and injects the faults, each on its own
period:

- ``urdf``: the description republished (the same panda, a panda whose hand is 10 % heavier, or a
  broken document that the node must refuse, keeping its model);
- ``param``: a bad parameter, generated from what the running node declares (list and describe
  services): every other ROS type and a delete for each parameter, and non-finite numbers,
  extreme numbers, empty arrays, huge arrays and huge strings of its own type, through
  ``set_parameters`` and ``set_parameters_atomically`` in turn (and ``~/set_payload`` for the
  ``payload_*`` parameters); a value the node accepts is set back to the value it had (and the
  answers in between are not judged);
- ``message``: a bad message (wrong lengths, NaN/Inf, empty/duplicate names, huge arrays, bad
  stamps on ``joint_states``; NaN or unknown frames on ``~/external_wrenches``; wrong length and
  NaN on ``~/desired_accelerations_array``);
- ``kill``: the joint-state publisher process killed (SIGKILL) and restarted.

Every answer is checked against ``rnea_ros.gravity_torques`` of the published model at the
positions the answer carries (|error| <= 1e-9 max(1, |tau|)); after a reload the node may answer
with the old model until it switches to the new one, never back.  The monitor takes answers and
commands raw (CDR bytes) and checks them in numpy batches every second
(``bench_soak_monitor``); its CPU time during the soak is printed.

Right after each node's first answer it is primed (``--prime-rounds``): bursts of the largest bad
message of each topic and of the largest parameter requests, so that the middleware's sample
pools reach their bound (queue depth x largest sample) before the RSS reference, taken
``--warmup`` s after the priming; the RSS just before and after the priming is printed too.

The measuring must not be what starves the nodes on a small machine: once the nodes run, this
process lowers its priority (niceness 5), and a (re)started publisher imports at niceness 10
before it streams at 0 (when allowed).  The publishers use Fast DDS's UDP transport
(``--publisher-transports``, with the discovery range SUBNET for them alone: under LOCALHOST,
rmw_fastrtps adds shared memory whatever ``FASTDDS_BUILTIN_TRANSPORTS`` says).  A process on the
shared-memory transport that is SIGKILLed and restarted stalls the other processes for 0.2 to
0.5 s: a thread of theirs that answers an acknowledgement opens a shared-memory port and sleeps
in ``SharedMemGlobal::open_port_internal`` while it holds the writer's lock, so that neither
data in nor ``publish()`` goes on meanwhile (seen with gdb in the nodes).  That is
a property of the middleware; ``--publisher-transports ''`` shows it (the missing answers are
also given as runs of consecutive stamps, and those in the 2 s after a publisher's restart).

Drops are counted two ways.  The nodes' own counts (their /diagnostics ``inputs_total``,
``outputs_total``, ``rejected_inputs_total``, read until a message published after the
publishers stopped): the good joint states sent while a node was up that it did not answer
(judged), those that never reached its callback, the bad messages lost on the way, and the
answers it published that the monitor did not receive (``bench_soak_analysis``).  Per stamp,
what the monitor saw (printed, not judged): the stamps the publishers confirmed sending (after
every message; a stamp answered after a publisher's last report counts as sent) without an answer
received.  Printed: RSS of each node after warm-up and at the end, both drop figures, non-finite
outputs, whether the first answers after every fault were correct, faults injected per kind and
how many killed a node (with the parameter and the node's last error line), and one PASS/FAIL
line per target.  A node that dies stays dead (``--respawn`` restarts it, and its kind of fault
is then not injected again) and the other arm goes on.

Usage: python benchmarks/bench_soak.py [--duration 600] [--rate 1000] [--respawn]
       python benchmarks/bench_soak.py --duration 20                 # smoke run
"""

import heapq
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..')
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, 'test'))
sys.path.insert(0, HERE)

from bench_soak_analysis import Analysis  # noqa: E402
from bench_soak_monitor import Arm, correct, cpu_seconds  # noqa: E402
from bench_soak_parts import (ARMS, bad_joint_states, bad_side_messages,  # noqa: E402
                              panda_variants, parameter_cases, WireMessage)
from bench_soak_report import MONITOR_NICE, parse_args, renice, report  # noqa: E402
from rcl_interfaces.msg import Parameter as ParameterMsg  # noqa: E402
from rcl_interfaces.msg import ParameterValue  # noqa: E402
import rclpy  # noqa: E402

PRIME_BURST = 10        # messages per priming burst: the depth of the node's queues
PRIME_CALLS = 10        # requests at once: a service's queue depth (more are dropped unanswered)
PRIME_REQUEST = 50_000  # bytes: the parameter requests of the priming are the larger ones


class Soak(Analysis):
    """The whole run: processes, the monitor node, the fault schedule and the analysis."""

    def __init__(self, args):
        """Build the models, the stream and the monitor node (nothing started yet)."""
        import numpy as np
        from rnea_ros import gravity_torques, RobotModel
        from robots import urdf_path
        self.args, self.np, self.gravity_torques = args, np, gravity_torques
        self.root = ROOT
        self.variants = panda_variants(urdf_path('panda'))
        self.models = [RobotModel.from_urdf_string(xml) for _, xml in self.variants[:2]]
        model = self.models[0]
        gravity_torques(model, np.zeros(model.nq))       # compiled (or cached) before the nodes
        mimic = {m[0] for m in model.mimic}
        names = [n for n in model.joint_names if n not in mimic]
        centers = []
        for name in names:
            i = model.joint_names.index(name)
            lo, hi = model.lower_limits[i], model.upper_limits[i]
            centers.append(((lo + hi) / 2, min(0.3, (hi - lo) / 4)))
        self.stream = {'names': names, 'centers': centers}
        self.limits = np.asarray(model.effort_limits, dtype=float)
        self.frame = model.body_links[-1]
        self.domain = args.domain if args.domain is not None else random.randint(150, 199)
        self.logdir = tempfile.mkdtemp(prefix='bench_soak_')
        self.rng = random.Random(args.seed)
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=self.domain)
        self.node = rclpy.create_node(f'soak_monitor_{random.randrange(1 << 30)}',
                                      context=self.context)
        try:
            from rclpy.experimental import EventsExecutor
            self.executor = EventsExecutor(context=self.context)
        except ImportError:
            from rclpy.executors import SingleThreadedExecutor
            self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.arms = {name: Arm(self, name) for name in ARMS}
        bad = bad_joint_states(names, [c for c, _ in centers])
        bad = [(kind, 'joint_states', msg) for kind, msg in bad] + bad_side_messages(self.frame)
        if args.messages:                   # only the kinds asked for (a substring matches)
            bad = [m for m in bad if any(word in m[0] for word in args.messages.split(','))]
        self.bad_messages = [(kind, topic, WireMessage(msg)) for kind, topic, msg in bad]
        self.bad_stamps = {}            # stamp ns of a bad joint state -> its kind
        self.faults = []
        self.quarantine = set()
        self.procs = []
        self.accepted_messages = {}

    # -- helpers ----------------------------------------------------------------------------

    def start(self, args, nice=0, env=None, **kwargs):
        """Start a process on this run's ROS domain at niceness ``nice`` (see ``renice``)."""
        env = dict(os.environ, ROS_DOMAIN_ID=str(self.domain),
                   PYTHONPATH=os.pathsep.join([ROOT, os.environ.get('PYTHONPATH', '')]),
                   **(env or {}))
        proc = subprocess.Popen(args, env=env, cwd=ROOT, **kwargs)   # vfork: no preexec_fn
        renice(nice, proc.pid)
        self.procs.append(proc)
        return proc

    def correct_rows(self, variant, position, effort):
        """Return per row whether ``effort`` is g(position) of model ``variant`` (1e-9 rel.)."""
        return correct(self.models[variant], self.gravity_torques, position, effort)

    def spin(self, seconds):
        """Handle callbacks for ``seconds``."""
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            self.executor.spin_once(timeout_sec=min(left, 0.01))

    def call(self, arm, client, request, timeout=5.0):
        """Call a service of an arm's node; return the response or None (no answer, or dead)."""
        future = client.call_async(request)
        end = time.monotonic() + timeout
        while not future.done() and time.monotonic() < end and arm.alive():
            self.executor.spin_once(timeout_sec=0.005)
        if not future.done():
            client.remove_pending_request(future)
            return None
        return future.result()

    def record(self, arm, category, kind, t, outcome='sent', detail='', run=None, wall=None):
        """Note one injected fault (``wall``: when it was sent, default now)."""
        self.faults.append({'arm': arm.name, 'category': category, 'kind': kind, 't': t,
                            'outcome': outcome, 'detail': detail, 'run': run,
                            'wall': time.time_ns() if wall is None else wall})

    # -- set-up -----------------------------------------------------------------------------

    def prepare(self, arm, timeout=240.0):
        """Wait for an arm's node services; generate its parameter cases from what it declares.

        Each call is repeated until the node answers: after a respawn the dead node's services
        may still look ready (a request to them is lost) until discovery forgets them.
        """
        from rcl_interfaces.srv import DescribeParameters, GetParameters, ListParameters
        end = time.monotonic() + timeout

        def ask(client, request):
            while True:
                if time.monotonic() > end or not arm.alive():
                    raise RuntimeError(f'the {arm.name} node did not come up (log: '
                                       f"{arm.lives[-1]['log']})")
                if client.service_is_ready():
                    response = self.call(arm, client, request, 5.0)
                    if response is not None:
                        return response
                self.spin(0.1)
        names = list(ask(arm.clients['list'], ListParameters.Request()).result.names)
        described = ask(arm.clients['describe'],
                        DescribeParameters.Request(names=names)).descriptors
        values = ask(arm.clients['get'], GetParameters.Request(names=names)).values
        arm.values = dict(zip(names, values))
        if arm.cases:
            return
        cases = parameter_cases([(d.name, d.type, d.read_only) for d in described])
        arm.cases = [case + (path,) for case in cases
                     for path in ('set_parameters', 'set_parameters_atomically', 'set_payload')
                     if path != 'set_payload' or (case[0].startswith('payload_')
                                                  and '.' not in case[0])]
        random.Random(f'{self.args.seed}-{arm.name}').shuffle(arm.cases)
        arm.declared = len(names)

    def wait_for(self, arms, test, what, timeout=120.0):
        """Spin until ``test(arm)`` holds for each arm (e.g. its node answered)."""
        end = time.monotonic() + timeout
        while not all(test(arm) for arm in arms):
            if time.monotonic() > end:
                missing = [arm.name for arm in arms if not test(arm)]
                raise RuntimeError(f'no {what} from {missing}')
            self.spin(0.05)

    def final_counts(self, arms, stopped, timeout=5.0):
        """Spin until each live node published its counts 50 ms after ``stopped`` (wall ns)."""
        def final(arm):
            return any(stamp > stopped + 50_000_000 for stamp, _ in arm.lives[-1]['diag'])
        end = time.monotonic() + timeout
        while time.monotonic() < end and not all(final(a) for a in arms if a.alive()):
            self.executor.spin_once(timeout_sec=0.01)
        for arm in arms:
            arm.lives[-1]['final'] = arm.alive() and final(arm)

    # -- the priming ------------------------------------------------------------------------

    def prime(self, arm):
        """Bring the node's middleware sample pools to their bound before the RSS reference.

        The pools of a subscription (and a service) grow to its queue depth times the largest
        sample that queued up, and stay: in a soak they grow as the huge messages and requests
        happen to queue together, over minutes.  Here, right after the node's first answer,
        ``--prime-rounds`` times: PRIME_BURST of the largest bad message of each topic, back
        to back, and (on the arms that get bad parameters) PRIME_CALLS at once of the largest
        request of each kind over PRIME_REQUEST bytes per service (the 10 000-element arrays
        and the 100 kB strings).  The RSS is sampled just before and 1 s after.
        """
        if not self.args.prime_rounds:
            arm.lives[-1]['primed'] = None
            return
        before, wall = arm.sample_rss(), time.time_ns()
        largest = {}
        for kind, topic, wire in self.bad_messages:
            if topic not in largest or len(wire) > len(largest[topic][1]):
                largest[topic] = (kind, wire)
        requests = self.large_requests(arm) if arm.name in self.args.param_arms else []
        for _ in range(self.args.prime_rounds):
            for topic, (kind, wire) in largest.items():
                wall = time.time_ns()
                for _ in range(PRIME_BURST):
                    self.send_bad(arm, kind, topic, wire)
                self.record(arm, 'prime', f'{kind} x{PRIME_BURST}', time.monotonic(),
                            detail=topic, wall=wall)
            for case in requests:
                self.param_burst(arm, *case)
            self.spin(0.2)
            if not arm.alive():
                return
        self.spin(1.0)
        arm.lives[-1]['primed'] = (before, arm.sample_rss(), time.monotonic())
        arm.lives[-1]['priming'] = (wall, time.time_ns())

    def large_requests(self, arm):
        """Return the largest case of each kind of bad parameter per service, if large."""
        largest = {}
        for name, kind, value, path in arm.cases:
            size = request_bytes(value)
            if size >= PRIME_REQUEST and size > largest.get((kind, path), (0,))[0]:
                largest[(kind, path)] = (size, (name, kind, value, path))
        return [case for _, case in largest.values()]

    def param_burst(self, arm, name, kind, value, path):
        """Send PRIME_CALLS requests setting a bad parameter at once; set back if accepted."""
        from rcl_interfaces.srv import SetParameters, SetParametersAtomically
        start, wall = time.monotonic(), time.time_ns()
        param = [ParameterMsg(name=name, value=value)]
        request = (SetParameters.Request(parameters=param) if path == 'set_parameters' else
                   SetParametersAtomically.Request(parameters=param))
        client = arm.clients[path]
        futures = [client.call_async(request) for _ in range(PRIME_CALLS)]
        end = start + 10.0
        while not all(f.done() for f in futures) and time.monotonic() < end and arm.alive():
            self.executor.spin_once(timeout_sec=0.005)
        results = []
        for future in futures:
            if not future.done():
                client.remove_pending_request(future)
                continue
            response = future.result()
            results.append((response.results[0] if path == 'set_parameters' else
                            response.result).successful)
        detail, t, outcome = f'{name} via {path}', time.monotonic(), 'refused'
        if any(results):
            back = self.call(arm, arm.clients['set_parameters'], SetParameters.Request(
                parameters=[ParameterMsg(name=name, value=arm.values.get(name,
                                                                         ParameterValue()))]))
            t = time.monotonic() + 0.05
            arm.accepted.append((start, t))
            outcome = 'accepted, set back' if back and back.results[0].successful else \
                'accepted, NOT set back'
        if len(results) < len(futures):
            outcome = 'no answer' if arm.alive() else 'killed the node'
            if not arm.alive():
                arm.deaths[-1]['killed_by'] = f'{name} ({kind}) via {path}, priming'
        self.record(arm, 'prime', f'{kind} x{PRIME_CALLS}', t, outcome, detail, wall=wall)

    # -- faults -----------------------------------------------------------------------------

    def param_fault(self, arm):
        """Send the arm's next bad parameter; set back what the node accepted."""
        from rcl_interfaces.srv import SetParameters, SetParametersAtomically
        if not arm.alive() or not arm.ready or not arm.cases:
            return
        for _ in range(len(arm.cases)):
            name, kind, value, path = arm.cases[arm.case_index % len(arm.cases)]
            arm.case_index += 1
            if kind not in self.quarantine:
                break
        else:
            return
        start, wall = time.monotonic(), time.time_ns()
        param = [ParameterMsg(name=name, value=value)]
        request = (SetParameters.Request(parameters=param) if path == 'set_parameters' else
                   SetParametersAtomically.Request(parameters=param))
        response = self.call(arm, arm.clients[path], request)
        detail = f'{name} via {path}'
        if response is None:
            if arm.alive():
                return self.record(arm, 'param', kind, time.monotonic(), 'no answer',
                                   detail, wall=wall)
            arm.deaths[-1]['killed_by'] = f'{name} ({kind}) via {path}'
            if self.args.respawn:
                self.quarantine.add(kind)
            return self.record(arm, 'param', kind, None, 'killed the node', detail, wall=wall)
        result = response.results[0] if path == 'set_parameters' else response.result
        if not result.successful:
            return self.record(arm, 'param', kind, time.monotonic(), 'refused',
                               detail + ': ' + result.reason[:120], wall=wall)
        old = arm.values.get(name, ParameterValue())
        back = self.call(arm, arm.clients['set_parameters'], SetParameters.Request(
            parameters=[ParameterMsg(name=name, value=old)]))
        arm.accepted.append((start, time.monotonic() + 0.05))
        outcome = 'accepted, set back'
        if back is None or not back.results[0].successful:
            outcome = 'accepted, NOT set back'
            detail += ': ' + (back.results[0].reason[:120] if back else 'no answer')
        self.record(arm, 'param', kind, time.monotonic() + 0.05, outcome, detail, wall=wall)

    def message_fault(self, arm):
        """Publish the arm's next bad message (stamped now)."""
        if not arm.alive():
            return
        kind, topic, wire = self.bad_messages[arm.message_index % len(self.bad_messages)]
        arm.message_index += 1
        wall = self.send_bad(arm, kind, topic, wire)
        self.record(arm, 'message', kind, time.monotonic(), detail=topic, wall=wall)

    def send_bad(self, arm, kind, topic, wire):
        """Publish a bad message (its bytes, stamped now); note it; return when (wall ns)."""
        now = time.time_ns()
        if wire.stamped:
            nanosec = wire.nanosec if kind == 'stamp nanosec >= 1e9' else now % 10 ** 9
            wire.stamp(now // 10 ** 9, nanosec)
            if topic == 'joint_states':
                self.bad_stamps[now // 10 ** 9 * 10 ** 9 + nanosec] = kind
        arm.bad[topic].publish(bytes(wire.data))
        arm.injected.append((now, topic))
        return now

    def urdf_fault(self, arm):
        """Republish the arm's robot description: another variant, the same, or broken."""
        from std_msgs.msg import String
        if not arm.alive():
            return
        order = (1, 2, 0, 0)            # heavier hand, broken, back to the panda, the same again
        index = order[arm.reload_index % len(order)]
        arm.reload_index += 1
        label, xml = self.variants[index]
        same = index == arm.latest
        arm.description.publish(String(data=xml))
        if index < len(self.models) and not same:
            arm.model_published(index)
        self.record(arm, 'urdf', label + (' (same again)' if same else ''), time.monotonic())

    def kill_fault(self, arm, schedule):
        """SIGKILL the arm's joint-state publisher; restart it after the gap."""
        if not arm.alive() or arm.publisher is None or arm.publisher.started is None:
            return                      # (a restarted publisher that is not streaming yet)
        arm.publisher.kill()
        arm.publisher = None

        def restart():
            arm.start_publisher()
            self.record(arm, 'kill', 'publisher SIGKILL + restart', None, run=arm.publisher)
        schedule(time.monotonic() + self.args.kill_gap, restart)

    def respawn(self, arm):
        """Restart a dead node (``--respawn``); the publisher keeps streaming."""
        arm.start_node()
        try:
            self.prepare(arm)
        except RuntimeError:
            return

    # -- the run ----------------------------------------------------------------------------

    def run(self):
        """Start everything, inject the faults for ``--duration`` s, stop; return the results."""
        from std_msgs.msg import String
        self.load_before = os.getloadavg()
        arms = list(self.arms.values())
        try:
            for arm in arms:
                arm.description.publish(String(data=self.variants[0][1]))
                arm.start_node(zero_base=True)
            for arm in arms:
                self.prepare(arm)
            # No joint state before the model is loaded: the node's counts are all answerable.
            self.wait_for(arms, lambda a: a.lives[-1]['loaded'], 'loaded model')
            renice(MONITOR_NICE)            # the apparatus yields the CPU to the nodes
            for arm in arms:
                arm.start_publisher()
            self.wait_for(arms, lambda a: a.ready, 'answer')
            for arm in arms:
                self.prime(arm)
            self.t0, self.wall0 = time.monotonic(), time.time_ns()
            self.next_progress = 0.0
            cpu = cpu_seconds()
            self.loop(arms)
            self.monitor_cpu = (cpu_seconds() - cpu, time.monotonic() - self.t0)
            for arm in arms:
                arm.sample_rss()
                arm.alive_at_end = arm.alive()
            for arm in arms:
                if arm.publisher is not None:
                    arm.publisher.proc.terminate()
                    arm.publisher.proc.wait(timeout=10)
            self.final_counts(arms, time.time_ns())
            self.spin(0.5)                  # the last answers
            for arm in arms:
                arm.flush()
        finally:
            self.stop()
        self.load_after = os.getloadavg()
        return self.analyse()

    def loop(self, arms):
        """Run the fault schedule until the end of the soak."""
        args = self.args
        end = self.t0 + args.duration
        events, seq = [], [0]

        def schedule(when, action, period=None):
            seq[0] += 1
            heapq.heappush(events, (when, seq[0], action, period))

        for i, arm in enumerate(arms):
            stagger = (i + 1) / (len(arms) + 1)
            if arm.name in args.param_arms:
                schedule(self.t0 + stagger * args.param_period,
                         lambda a=arm: self.param_fault(a), args.param_period)
            schedule(self.t0 + stagger * args.message_period,
                     lambda a=arm: self.message_fault(a), args.message_period)
            schedule(self.t0 + stagger * args.reload_period,
                     lambda a=arm: self.urdf_fault(a), args.reload_period)
            schedule(self.t0 + stagger * args.kill_period,
                     lambda a=arm: self.kill_fault(a, schedule), args.kill_period)
        schedule(self.t0, self.housekeeping, 1.0)
        while True:
            now = time.monotonic()
            if now >= end:
                return
            if events and events[0][0] <= now:
                when, _, action, period = heapq.heappop(events)
                action()
                if period:
                    schedule(max(when + period, time.monotonic()), action, period)
                continue
            wait = min(end, events[0][0] if events else end) - now
            self.executor.spin_once(timeout_sec=min(max(wait, 0.0), 0.01))

    def housekeeping(self):
        """Check what came; sample the nodes' RSS (and so note deaths); respawn if asked."""
        for arm in self.arms.values():
            arm.flush()
            arm.sample_rss()
            if arm.proc is None and self.args.respawn:
                self.respawn(arm)
            elif arm.ready and arm.proc is not None and 'primed' not in arm.lives[-1]:
                self.prime(arm)             # a respawned node, after its first answer
        t = time.monotonic() - self.t0
        if t >= self.next_progress:
            self.next_progress += self.args.progress
            lines = []
            for a in self.arms.values():
                rss = a.lives[-1]['rss']
                state = f'RSS {rss[-1][1]:.1f} MB' if a.proc and rss else 'dead'
                lines.append(f'{a.name}: {state}, {len(a.times)} answers')
            print(f't={t:5.0f} s  ' + '  |  '.join(lines), flush=True)

    def stop(self):
        """Stop every process this run started (SIGINT, then SIGKILL)."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for arm in self.arms.values():
            for run in arm.runs:
                run.reported()              # its last count kept, its file removed
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def request_bytes(value):
    """Return about how many bytes a ParameterValue takes in a request (its largest field)."""
    sizes = [len(value.string_value), len(value.byte_array_value),
             8 * len(value.double_array_value), 8 * len(value.integer_array_value),
             len(value.bool_array_value), sum(len(x) + 8 for x in value.string_array_value)]
    return max(sizes)


def run_soak(argv=None):
    """Run a soak with the given command-line arguments; return (results, all targets met)."""
    args = parse_args(argv, __doc__.split('\n')[0])
    results = Soak(args).run()
    return results, report(results)


def main():
    """Run the soak; exit 1 if a target is not met."""
    return 0 if run_soak()[1] else 1


if __name__ == '__main__':
    sys.exit(main())
