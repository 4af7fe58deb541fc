"""Benchmark: a soak of the two-arm namespaced setup at 1 kHz with faults (issue 29 item 5).

Two rnea nodes (``python -m rnea_ros.node``, namespaces /left and /right, the shipped
``config/gravity_compensation.yaml`` with command output enabled on
``<ns>/effort_controller/commands``) compute the gravity compensation of a panda
(example-robot-data) whose description they read from ``<ns>/robot_description`` (transient
local, published here).  Per arm a joint-state publisher process streams every non-mimic joint at
``--rate`` Hz on ``<ns>/joint_states`` (stamped with the wall clock; it reports what it sent on
its stdout).  This process is the monitor: it records every ``<ns>/rnea/joint_efforts`` answer and
every command, and injects the faults, each on its own period:

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
with the old model until it switches to the new one, never back.  Printed: RSS of each node after
warm-up and at the end, drops (joint states confirmed sent without an answer), non-finite outputs,
whether the first answers after every fault were correct, faults injected per kind and how many
killed a node (with the parameter and the node's last error line), and one PASS/FAIL line per
target.  A node that dies stays dead (``--respawn`` restarts it, and its kind of fault is then
not injected again) and the other arm goes on.

Usage: python benchmarks/bench_soak.py [--duration 600] [--rate 1000] [--respawn]
       python benchmarks/bench_soak.py --duration 20                 # smoke run
"""

import argparse
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

from bench_soak_parts import (Arm, ARMS, bad_joint_states, bad_side_messages,  # noqa: E402
                              CHECK_AFTER, panda_variants, parameter_cases, report, TOL)
from rcl_interfaces.msg import Parameter as ParameterMsg  # noqa: E402
from rcl_interfaces.msg import ParameterValue  # noqa: E402
import rclpy  # noqa: E402


class Soak:
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
        self.bad_messages = [(kind, 'joint_states', msg) for kind, msg in bad] + \
            bad_side_messages(self.frame)
        if args.messages:                   # only the kinds asked for (a substring matches)
            self.bad_messages = [m for m in self.bad_messages
                                 if any(word in m[0] for word in args.messages.split(','))]
        self.bad_stamps = {}            # stamp ns of a bad joint state -> its kind
        self.faults = []
        self.quarantine = set()
        self.procs = []
        self.accepted_messages = {}

    # -- helpers ----------------------------------------------------------------------------

    def start(self, args, **kwargs):
        """Start a process on this run's ROS domain."""
        env = dict(os.environ, ROS_DOMAIN_ID=str(self.domain),
                   PYTHONPATH=os.pathsep.join([ROOT, os.environ.get('PYTHONPATH', '')]))
        proc = subprocess.Popen(args, env=env, cwd=ROOT, **kwargs)
        self.procs.append(proc)
        return proc

    def correct(self, variant, position, effort):
        """Return whether ``effort`` is g(position) of model ``variant`` (to 1e-9 relative)."""
        model = self.models[variant]
        if len(position) != model.nq or len(effort) != model.nv:
            return False
        tau = self.gravity_torques(model, position)
        return bool((abs(effort - tau) <= TOL * self.np.maximum(1.0, abs(tau))).all())

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
        """Wait for an arm's node services; generate its parameter cases from what it declares."""
        from rcl_interfaces.srv import DescribeParameters, GetParameters, ListParameters
        end = time.monotonic() + timeout
        while not arm.clients['list'].service_is_ready():
            if time.monotonic() > end or not arm.alive():
                raise RuntimeError(f'the {arm.name} node did not come up (log: '
                                   f"{arm.lives[-1]['log']})")
            self.spin(0.1)
        names = self.call(arm, arm.clients['list'], ListParameters.Request(), 30.0)
        names = list(names.result.names)
        described = self.call(arm, arm.clients['describe'],
                              DescribeParameters.Request(names=names), 30.0).descriptors
        values = self.call(arm, arm.clients['get'], GetParameters.Request(names=names),
                           30.0).values
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

    def wait_answers(self, arms, timeout=120.0):
        """Spin until each arm's node answered a joint state."""
        end = time.monotonic() + timeout
        while not all(arm.ready for arm in arms):
            if time.monotonic() > end:
                missing = [arm.name for arm in arms if not arm.ready]
                raise RuntimeError(f'no answer from {missing}')
            self.spin(0.05)

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
        kind, topic, msg = self.bad_messages[arm.message_index % len(self.bad_messages)]
        arm.message_index += 1
        now = time.time_ns()
        if hasattr(msg, 'header'):
            msg.header.stamp.sec = now // 10 ** 9
            if kind != 'stamp nanosec >= 1e9':
                msg.header.stamp.nanosec = now % 10 ** 9
        if topic == 'joint_states':
            stamp = msg.header.stamp.sec * 10 ** 9 + msg.header.stamp.nanosec
            self.bad_stamps[stamp] = kind
        arm.bad[topic].publish(msg)
        self.record(arm, 'message', kind, time.monotonic(), detail=topic)

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
            arm.latest, arm.published_at = index, time.monotonic()
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
                arm.start_node()
            for arm in arms:
                self.prepare(arm)
            for arm in arms:
                arm.start_publisher()
            self.wait_answers(arms)
            self.t0 = time.monotonic()
            self.next_progress = 0.0
            self.loop(arms)
            for arm in arms:
                arm.sample_rss()
                arm.alive_at_end = arm.alive()
            for arm in arms:
                if arm.publisher is not None:
                    arm.publisher.proc.terminate()
                    arm.publisher.proc.wait(timeout=10)
            self.spin(1.5)                  # the last answers and the nodes' final counts
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
        """Sample the nodes' RSS (and so note deaths); respawn a dead node if asked."""
        for arm in self.arms.values():
            arm.sample_rss()
            if arm.proc is None and self.args.respawn:
                self.respawn(arm)
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
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)

    # -- analysis ---------------------------------------------------------------------------

    def analyse(self):
        """Return the figures of the run (a dict, also printed by :func:`report`)."""
        np = self.np
        out = {'duration': self.args.duration, 'rate': self.args.rate, 'arms': {},
               'warmup': self.args.warmup, 'logs': self.logdir,
               'load_before': self.load_before, 'load_after': self.load_after,
               'faults': self.faults, 'quarantine': sorted(self.quarantine),
               'accepted_messages': self.accepted_messages}
        for arm in self.arms.values():
            times = np.frombuffer(arm.times, dtype=float) if len(arm.times) else np.zeros(0)
            status = np.frombuffer(arm.status, dtype=np.int8) if len(arm.status) else \
                np.zeros(0, dtype=np.int8)
            tainted = np.zeros(len(times), dtype=bool)
            for a, b in arm.accepted:
                tainted |= (times >= a) & (times <= b)
            for fault in self.faults:
                if fault['arm'] == arm.name:
                    fault['after'] = self.after(fault, times, status, tainted)
            sent, answered, blame = self.drops(arm)
            out['arms'][arm.name] = {
                'answers': len(times), 'sent': sent, 'answered': answered, 'blame': blame,
                'skipped': arm.skipped,
                'mismatches': int(((status == 1) & ~tainted).sum()),
                'not judged': int(tainted.sum()), 'nonfinite': arm.nonfinite,
                'commands': arm.commands, 'bad_commands': arm.bad_commands,
                'rss': [self.rss_growth(life) for life in arm.lives],
                'deaths': [{k: d.get(k) for k in ('returncode', 'last_line', 'killed_by')}
                           for d in arm.deaths],
                'alive': arm.alive_at_end,
                'reloads_taken': len(arm.switches),
                'reload_s': [b - a for a, b in arm.switches],
                'declared': arm.declared, 'cases': len(arm.cases), 'counts': arm.counts,
                'sent_all': int(np.unique(np.concatenate(
                    [run.sent() for run in arm.runs] + [np.zeros(0, dtype=np.int64)])).size),
                'bad_joint_states': sum(1 for f in self.faults if f['arm'] == arm.name
                                        and f['category'] == 'message'
                                        and f['detail'] == 'joint_states'),
                'answers_last_life': len(times) - arm.lives[-1]['answers_before']
                if arm.lives else 0,
                'tried': min(arm.case_index, len(arm.cases))}
        return out

    def after(self, fault, times, status, tainted):
        """Return 'ok', 'WRONG' or 'no answer': the first answers after a fault took effect."""
        t = fault['t']
        if fault['run'] is not None:
            t = fault['run'].started        # its first counted message is out
        if t is None:
            return 'no answer'
        i = int(self.np.searchsorted(times, t))
        picked = [s for s, bad in zip(status[i:i + 4 * CHECK_AFTER], tainted[i:]) if not bad]
        picked = picked[:CHECK_AFTER]
        if not picked:
            return 'no answer'
        return 'ok' if all(s == 0 for s in picked) else 'WRONG'

    def drops(self, arm):
        """Return (sent while the node was up, answered, {fault before: missing answers}).

        Sent: the stamps each publisher process confirmed (its reports), within the node's
        lives (its first answer to its last before it died).  Answered: those among the answer
        stamps.  Each missing answer is put down to the last fault injected on the arm up to
        10 ms before its stamp ('none' if there is none).  Answers to bad joint states are
        counted per kind in ``self.accepted_messages`` (the node should have refused them).
        """
        np = self.np
        stamps = np.unique(np.frombuffer(arm.stamps, dtype=np.int64)) if len(arm.stamps) \
            else np.zeros(0, dtype=np.int64)
        bad = np.isin(stamps, np.fromiter(self.bad_stamps, dtype=np.int64))
        for stamp in stamps[bad]:
            kind = self.bad_stamps[int(stamp)]
            self.accepted_messages[kind] = self.accepted_messages.get(kind, 0) + 1
        stamps = stamps[~bad]
        up = np.zeros(0, dtype=np.int64)
        sent = np.unique(np.concatenate([run.sent() for run in arm.runs] + [up]))
        keep = np.zeros(len(sent), dtype=bool)
        for life in arm.lives:
            if life.get('first_stamp') is None:
                continue
            end = life.get('wall', 1 << 62)
            if 'wall' in life:              # a death: up to its last answer (not its dying)
                end = int(stamps[stamps <= end].max(initial=life['first_stamp']))
            keep |= (sent >= life['first_stamp']) & (sent <= end)
        sent = sent[keep]
        missing = sent[~np.isin(sent, stamps)]
        faults = sorted((f['wall'], f['category'] + ': ' + f['kind']) for f in self.faults
                        if f['arm'] == arm.name)
        walls = np.array([w for w, _ in faults], dtype=np.int64)
        blame = {}
        for stamp in missing:
            j = int(np.searchsorted(walls, stamp, side='right')) - 1
            label = faults[j][1] if j >= 0 and walls[j] >= stamp - 10_000_000 else 'none'
            blame[label] = blame.get(label, 0) + 1
        arm.skipped = sum(b - a for run in arm.runs for a, b in run.skips)
        return len(sent), len(sent) - len(missing), blame

    def rss_growth(self, life):
        """Return (RSS MB after warm-up, at the end, minutes between, MB in the last half)."""
        start = life['first_answer']
        if start is None:
            return None
        samples = [(t, mb) for t, mb in life['rss'] if t >= start + self.args.warmup]
        if len(samples) < 2:
            return None
        middle = (samples[0][0] + samples[-1][0]) / 2
        half = [mb for t, mb in samples if t >= middle]
        return (samples[0][1], samples[-1][1], (samples[-1][0] - samples[0][0]) / 60.0,
                half[-1] - half[0])


def parse_args(argv=None):
    """Parse the command line (defaults: 600 s at 1 kHz)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--duration', type=float, default=600.0, help='seconds of soak')
    parser.add_argument('--rate', type=float, default=1000.0, help='joint states per second')
    parser.add_argument('--warmup', type=float, default=None,
                        help='seconds after a node first answers before its RSS reference '
                        '(default: a tenth of the duration, 2 to 60 s)')
    parser.add_argument('--param-period', type=float, default=0.25,
                        help='seconds between bad parameters, per arm')
    parser.add_argument('--param-arms', default='left,right',
                        help='arms that get bad parameters (comma-separated; empty: none)')
    parser.add_argument('--message-period', type=float, default=0.1,
                        help='seconds between bad messages, per arm')
    parser.add_argument('--messages', default='',
                        help='only these kinds of bad messages (comma-separated substrings of '
                        "their names, e.g. 'huge,nan'; default: all)")
    parser.add_argument('--reload-period', type=float, default=5.0,
                        help='seconds between robot description republications, per arm')
    parser.add_argument('--kill-period', type=float, default=None,
                        help='seconds between kills of a joint-state publisher, per arm '
                        '(default: 30, at most a third of the duration)')
    parser.add_argument('--kill-gap', type=float, default=0.5,
                        help='seconds between a kill and the restart')
    parser.add_argument('--respawn', action='store_true',
                        help='restart a node that died; its kind of fault is not injected again')
    parser.add_argument('--progress', type=float, default=30.0,
                        help='seconds between progress lines')
    parser.add_argument('--seed', type=int, default=0, help='order of the parameter cases')
    parser.add_argument('--domain', type=int, default=None,
                        help='ROS domain (default: a random one of 150-199)')
    args = parser.parse_args(argv)
    if args.warmup is None:
        args.warmup = min(60.0, max(2.0, args.duration / 10.0))
    if args.kill_period is None:
        args.kill_period = min(30.0, args.duration / 3.0)
    args.param_arms = [a for a in args.param_arms.split(',') if a]
    return args


def run_soak(argv=None):
    """Run a soak with the given command-line arguments; return (results, all targets met)."""
    args = parse_args(argv)
    results = Soak(args).run()
    return results, report(results)


def main():
    """Run the soak; exit 1 if a target is not met."""
    return 0 if run_soak()[1] else 1


if __name__ == '__main__':
    sys.exit(main())
