"""Part of ``bench_soak.py``: its command line, the printed report and the PASS/FAIL verdicts."""

import argparse
import os
import time

from bench_soak_parts import tree


def fault_table(faults, accepted_messages):
    """Return rows (category, kind, injected, refused, accepted, killed, no answer, ok, wrong).

    For a message, accepted: the node answered it (refused: '-', not observable).
    """
    rows = {}
    for f in faults:
        row = rows.setdefault((f['category'], f['kind']), [0] * 7)
        row[0] += 1
        outcome = f['outcome']
        row[1] += outcome == 'refused'
        row[2] += outcome.startswith('accepted')
        row[3] += outcome == 'killed the node'
        row[4] += outcome == 'no answer'
        row[5] += f.get('after') == 'ok'
        row[6] += f.get('after') == 'WRONG'
    for (category, kind), row in rows.items():
        if category == 'message':
            row[1], row[2] = '-', accepted_messages.get(kind, 0)
    return [key + tuple(value) for key, value in sorted(rows.items())]


def node_totals(arms):
    """Return the node counts (``Soak.node_counts``) summed over the arms."""
    keys = ('good', 'bad', 'side', 'offered', 'answered', 'bad_answered', 'good_unanswered',
            'inputs', 'lost', 'rejected', 'bad_lost', 'received', 'missed')
    return {k: sum(a['node'][k] for a in arms) for k in keys}


def percent(part, whole):
    """Return ``part`` of ``whole`` in % (NaN if whole is 0)."""
    return 100.0 * part / whole if whole else float('nan')


def verdicts(res):
    """Return [(target, figure text, passed)] of the issue 29 soak targets."""
    arms = res['arms'].values()
    enough = (res['duration'] - res['warmup']) / 2 / 60.0    # minutes: half the soak at least
    growth = [g[1] - g[0] for arm in arms for g in arm['rss'] if g and g[2] >= enough]
    sent = sum(a['sent'] for a in arms)
    answered = sum(a['answered'] for a in arms)
    node = node_totals(arms)
    wrong = sum(f.get('after') == 'WRONG' for f in res['faults'])
    checked = sum(f.get('after') == 'ok' for f in res['faults'])
    mismatches = sum(a['mismatches'] for a in arms)
    kills = sum(len(a['deaths']) for a in arms)
    return [
        ('RSS growth after warm-up <= 5 MB',
         ', '.join(f'{g:+.2f} MB' for g in growth) or
         'not measured (no node lived half the soak after its warm-up)',
         bool(growth) and max(growth) <= 5.0),
        ('drops <= 0.1 % (good joint states the nodes did not answer, their own counts)',
         f"{node['good_unanswered']} of {node['good']} "
         f"({percent(node['good_unanswered'], node['good']):.3f} %); not judged: per stamp, "
         f'what the monitor saw: {sent - answered} of {sent} '
         f'({percent(sent - answered, sent):.3f} %), the monitor missing '
         f"{node['missed']} answers the nodes published",
         node['good'] > 0 and node['good_unanswered'] <= 0.001 * node['good']),
        ('non-finite outputs = 0', str(sum(a['nonfinite'] for a in arms)),
         sum(a['nonfinite'] for a in arms) == 0),
        ('efforts correct after every fault',
         f'{checked} faults followed by correct answers, {wrong} by wrong ones; {mismatches} '
         'wrong answers in all', checked > 0 and wrong == 0 and mismatches == 0),
        ('no node killed', f'{kills} node deaths', kills == 0),
    ]


def node_lines(name, a):
    """Return the lines of an arm's joint-state account: the node's counts, the monitor's."""
    n = a['node']
    how = ('exact' if n['exact'] else
           'a respawned life or a death: uncertain by the few states queued at its ends')
    lines = [
        f"{name}, the node's own counts ({n['lives']} of {len(a['rss'])} lives, {how}): good "
        f"joint states sent while it was up {n['good']}, answered "
        f"{n['answered'] - n['bad_answered']} -> not answered {n['good_unanswered']} "
        f"({percent(n['good_unanswered'], n['good']):.3f} %); joint states received "
        f"{n['inputs']} of {n['offered']} sent, good and bad ({n['lost']} never reached its "
        f"callback); bad messages, every topic: {n['bad'] + n['side']} sent, {n['rejected']} "
        f"refused, {n['bad_answered']} answered, {n['bad_lost']} neither (lost on the way)",
        f"{name}, the monitor: received {n['received']} of the node's {n['answered']} answers "
        f"({n['missed']} missed, {percent(n['missed'], n['answered']):.3f} %); per stamp "
        f"(counted states from the node's first answer): {a['sent']} sent, {a['answered']} "
        f"answers received ({a['sent'] - a['answered']} missing, "
        f"{percent(a['sent'] - a['answered'], a['sent']):.3f} %); answers decoded one by one: "
        f"{a['slow']}"]
    return lines


def report(res):
    """Print the figures and one PASS/FAIL line per target; return whether all passed."""
    def loads(x):
        return ' / '.join(f'{v:.2f}' for v in x)
    print(f"\nrnea soak ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f'{os.uname().nodename}, tree {tree()}): two panda rnea nodes (/left, /right), gravity '
          f"compensation, {res['rate']:.0f} Hz for {res['duration']:.0f} s, warm-up "
          f"{res['warmup']:.0f} s after the priming, {os.cpu_count()} CPUs, load averages "
          f"(1, 5, 15 min) before {loads(res['load_before'])}, after "
          f"{loads(res['load_after'])}\n")
    head = ('fault', 'kind', 'injected', 'refused', 'accepted (set back)', 'killed a node',
            'no answer', 'answers correct after', 'wrong after')
    print('| ' + ' | '.join(head) + ' |\n|' + '---|' * len(head))
    for row in fault_table(res['faults'], res['accepted_messages']):
        print('| ' + ' | '.join(str(x) for x in row) + ' |')
    head = ('arm', 'parameter cases tried / generated', 'RSS after warm-up / end MB (minutes; '
            'growth in the last half)',
            'sent', 'answered', 'drops', 'non-finite', 'wrong answers', 'not judged',
            'commands (bad)', 'reloads taken (median s)', 'alive at end')
    print('\n| ' + ' | '.join(head) + ' |\n|' + '---|' * len(head))
    for name, a in res['arms'].items():
        rss = '; '.join(f'{g[0]:.1f} / {g[1]:.1f} ({g[2]:.1f} min; {g[3]:+.1f})'
                        for g in a['rss'] if g)
        med = sorted(a['reload_s'])[len(a['reload_s']) // 2] if a['reload_s'] else float('nan')
        print(f"| {name} | {a['tried']} / {a['cases']} ({a['declared']} parameters) | "
              f"{rss or '-'} | "
              f"{a['sent']} | {a['answered']} | {a['sent'] - a['answered']} | {a['nonfinite']} | "
              f"{a['mismatches']} | {a['not judged']} | {a['commands']} ({a['bad_commands']}) | "
              f"{a['reloads_taken']} ({med:.2f}) | {'yes' if a['alive'] else 'NO'} |")
    print()
    for name, a in res['arms'].items():
        for d in a['deaths']:
            print(f"{name} node died (exit {d['returncode']}), killed by "
                  f"{d.get('killed_by') or 'no parameter in flight'}: {d['last_line']}")
    for name, a in res['arms'].items():
        for line in node_lines(name, a):
            print(line)
    for name, a in res['arms'].items():
        blame = sorted(a['blame'].items(), key=lambda x: -x[1])
        print(f'{name}: missing answers (per stamp) by the fault just before them: ' +
              (', '.join(f'{k} {v}' for k, v in blame[:8]) or 'none') +
              f"; publisher slots skipped (starved 5 ms, not counted): {a['skipped']}")
        r = a.get('restarts')
        if r and r['restarts']:
            lag = sorted(r['lag_ms'])
            print(f"{name}: of those, in the first 2 s of this arm's {r['restarts']} restarted "
                  f"publishers {r['own']}, of the other arm's {r['other']}; first answer to a "
                  f'restarted publisher after its first counted message: median '
                  f'{lag[len(lag) // 2]:.0f} ms, max {lag[-1]:.0f} ms' if lag else '')
        if r and r['bursts']:
            print(f"{name}: the missing answers (per stamp) in {r['bursts']} runs of "
                  'consecutive stamps; the largest (stamps, at s after the start): ' +
                  ', '.join(f'{n} at {t:.1f}' for n, t in r['largest']))
    for name, a in res['arms'].items():
        primed = '; '.join(f'{p[0]:.1f} -> {p[1]:.1f} MB ({p[1] - p[0]:+.1f})'
                           for p in a['primed'] if p)
        print(f"{name}: RSS just before / after the priming ({res['prime_rounds']} rounds): "
              f"{primed or 'not primed'}")
    for name, a in res['arms'].items():
        for g in a['rss']:
            if g:
                print(f'{name}: RSS MB after the warm-up, at every tenth of the {g[2]:.1f} min: '
                      + ' '.join(f'{mb:.1f}' for mb in g[4]))
    cpu, wall = res['monitor_cpu']
    print(f'monitor CPU (this process, all threads, during the soak): {cpu:.1f} s in '
          f'{wall:.1f} s ({percent(cpu, wall):.1f} % of one core)')
    accepted = sorted({f"{f['detail'].split(' via ')[0]} ({f['kind']})" for f in res['faults']
                       if f['outcome'].startswith('accepted')})
    if accepted:
        print('bad parameters accepted (then set back): ' + '; '.join(accepted))
    print(f"node logs: {res['logs']}")
    killers = sorted({f['detail'] for f in res['faults'] if f['outcome'] == 'killed the node'})
    if killers:
        print('parameters that killed a node: ' + '; '.join(killers))
    if res['quarantine']:
        print('kinds not injected again after a kill (--respawn): ' + ', '.join(res['quarantine']))
    print()
    ok = True
    for target, figure, passed in verdicts(res):
        print(f"{'PASS' if passed else 'FAIL'}  {target}: {figure}")
        ok = ok and passed
    return ok


MONITOR_NICE = 5          # this process, once the nodes run: the measuring yields to the nodes


def renice(nice, pid=0):
    """Set the niceness of process ``pid`` (0: this one) to ``nice``, if allowed.

    The soak judges the nodes; its own processes (this monitor, a publisher starting up: a
    second of imports on one of two cores) must not be what starves them.  Lowering a niceness
    needs privileges: without them it stays as it is.  A child is reniced after it started
    (``subprocess`` then starts it with vfork: a fork would copy this process's page tables
    while its threads wait).
    """
    try:
        os.setpriority(os.PRIO_PROCESS, pid, nice)
    except OSError:
        pass


def parse_args(argv=None, description=None):
    """Parse the command line (defaults: 600 s at 1 kHz)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument('--duration', type=float, default=600.0, help='seconds of soak')
    parser.add_argument('--rate', type=float, default=1000.0, help='joint states per second')
    parser.add_argument('--warmup', type=float, default=None,
                        help='seconds after the priming (else after a node first answers) '
                        'before its RSS reference (default: a fifth of the duration, 2 to 120 s)')
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
    parser.add_argument('--publisher-transports', default='UDPv4', metavar='NAMES',
                        help='FASTDDS_BUILTIN_TRANSPORTS of the joint-state publishers, with the '
                        'discovery range SUBNET (default UDPv4: a publisher SIGKILLed on shared '
                        'memory and restarted stalls the shared-memory threads of the nodes and '
                        "this monitor for 0.2 to 0.5 s; '' keeps the environment's)")
    parser.add_argument('--respawn', action='store_true',
                        help='restart a node that died; its kind of fault is not injected again')
    parser.add_argument('--prime-rounds', type=int, default=10,
                        help='bursts of the largest messages and parameter requests sent after '
                        "a node's first answer, before its warm-up (0: no priming)")
    parser.add_argument('--progress', type=float, default=30.0,
                        help='seconds between progress lines')
    parser.add_argument('--seed', type=int, default=0, help='order of the parameter cases')
    parser.add_argument('--domain', type=int, default=None,
                        help='ROS domain (default: a random one of 150-199)')
    args = parser.parse_args(argv)
    if args.warmup is None:
        args.warmup = min(120.0, max(2.0, args.duration / 5.0))
    if args.kill_period is None:
        args.kill_period = min(30.0, args.duration / 3.0)
    args.param_arms = [a for a in args.param_arms.split(',') if a]
    return args
