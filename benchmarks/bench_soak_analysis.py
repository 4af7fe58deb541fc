"""Part of ``bench_soak.py``: the figures of a soak (drops per stamp, the nodes' own counts, RSS).

:class:`Analysis` is a base of ``bench_soak.Soak``: its methods read what the run recorded
(``self.arms``, ``self.faults``, ``self.bad_stamps``, ``self.args``).
"""

from bench_soak_parts import CHECK_AFTER
import numpy as np


class Analysis:
    """The analysis of a finished soak (methods of ``bench_soak.Soak``)."""

    def analyse(self):
        """Return the figures of the run (a dict, also printed by :func:`report`)."""
        out = {'duration': self.args.duration, 'rate': self.args.rate, 'arms': {},
               'warmup': self.args.warmup, 'logs': self.logdir,
               'load_before': self.load_before, 'load_after': self.load_after,
               'faults': self.faults, 'quarantine': sorted(self.quarantine),
               'accepted_messages': self.accepted_messages, 'monitor_cpu': self.monitor_cpu,
               'prime_rounds': self.args.prime_rounds}
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
            answers = np.sort(np.frombuffer(arm.stamps, dtype=np.int64)) if len(arm.stamps) \
                else np.zeros(0, dtype=np.int64)
            sent, answered, blame = self.drops(arm, answers)
            out['arms'][arm.name] = {
                'answers': len(times), 'sent': sent, 'answered': answered, 'blame': blame,
                'skipped': arm.skipped, 'restarts': getattr(arm, 'restarts', None),
                'node': self.node_counts(arm, answers),
                'mismatches': int(((status == 1) & ~tainted).sum()),
                'not judged': int(tainted.sum()), 'nonfinite': arm.nonfinite,
                'commands': arm.commands, 'bad_commands': arm.bad_commands,
                'slow': arm.answer_decoder.slow + arm.command_decoder.slow,
                'rss': [self.rss_growth(life) for life in arm.lives],
                'primed': [life.get('primed') for life in arm.lives],
                'deaths': [{k: d.get(k) for k in ('returncode', 'last_line', 'killed_by')}
                           for d in arm.deaths],
                'alive': arm.alive_at_end,
                'reloads_taken': len(arm.switches),
                'reload_s': [b - a for a, b in arm.switches],
                'declared': arm.declared, 'cases': len(arm.cases), 'counts': arm.counts,
                'tried': min(arm.case_index, len(arm.cases))}
        return out

    def after(self, fault, times, status, tainted):
        """Return 'ok', 'WRONG' or 'no answer': the first answers after a fault took effect."""
        t = fault['t']
        if fault['run'] is not None:
            t = fault['run'].started        # its first counted message is out
        if t is None:
            return 'no answer'
        i = int(np.searchsorted(times, t))
        picked = [s for s, bad in zip(status[i:i + 4 * CHECK_AFTER], tainted[i:]) if not bad]
        picked = picked[:CHECK_AFTER]
        if not picked:
            return 'no answer'
        return 'ok' if all(s == 0 for s in picked) else 'WRONG'

    def sent_stamps(self, arm, answers, counted=True):
        """Return the sorted stamps the arm's publishers sent (see ``PublisherRun.sent``)."""
        runs = [run for run in arm.runs if run.origin is not None]
        parts = [run.sent(answers, until=nxt.origin if nxt else None, counted=counted)
                 for run, nxt in zip(runs, runs[1:] + [None])]
        return np.unique(np.concatenate(parts + [np.zeros(0, dtype=np.int64)]))

    def drops(self, arm, answers):
        """Return (sent while the node was up, answered, {fault before: missing answers}).

        Per stamp, what the monitor saw.  Sent: the counted stamps of each publisher process
        (its reports, and any answered stamp after its last one), within the node's lives (its
        first answer to its last before it died).  Answered: those among the answer stamps the
        monitor received (``answers``, sorted).  Each missing answer is put down to the last
        fault injected on the arm up to 10 ms before its stamp ('none' if there is none), or to
        the priming if it was sent then.
        Answers to bad joint states are counted per kind in ``self.accepted_messages`` (the
        node should have refused them).
        """
        stamps = np.unique(answers)
        bad = np.isin(stamps, np.fromiter(self.bad_stamps, dtype=np.int64))
        for stamp in stamps[bad]:
            kind = self.bad_stamps[int(stamp)]
            self.accepted_messages[kind] = self.accepted_messages.get(kind, 0) + 1
        stamps = stamps[~bad]
        sent = self.sent_stamps(arm, stamps)
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
        primings = [life['priming'] for life in arm.lives if 'priming' in life]
        blame = {}
        for stamp in missing:
            j = int(np.searchsorted(walls, stamp, side='right')) - 1
            label = faults[j][1] if j >= 0 and walls[j] >= stamp - 10_000_000 else 'none'
            if any(a <= stamp <= b for a, b in primings):
                label = 'the priming'
            blame[label] = blame.get(label, 0) + 1
        arm.skipped = sum(b - a for run in arm.runs for a, b in run.skips
                          if run.first is not None and b > run.first)
        arm.restarts = self.restart_figures(arm, stamps, missing)
        return len(sent), len(sent) - len(missing), blame

    def restart_figures(self, arm, stamps, missing, window=2_000_000_000):
        """Return where the missing answers lie relative to the publishers' restarts (a dict).

        ``own``: missing stamps in the first ``window`` ns of a restarted publisher of this arm
        (its first process is not a restart); ``other``: in that window after the other arm's
        restart; ``lag_ms``: per restart of this arm, the time from its first counted message
        to the first one the node answered (the node's reader discovering the new publisher).
        """
        def restarts(a):
            return np.array([run.origin + run.first * run.period for run in a.runs[1:]
                             if run.origin is not None and run.first is not None],
                            dtype=np.int64)

        def near(starts):
            if not starts.size or not missing.size:
                return 0
            j = np.searchsorted(starts, missing, side='right') - 1
            ok = j >= 0
            return int(((missing[ok] - starts[j[ok]]) < window).sum())

        own = np.sort(restarts(arm))
        other = np.sort(np.concatenate([restarts(a) for a in self.arms.values()
                                        if a is not arm] + [np.zeros(0, dtype=np.int64)]))
        lag = []
        for start in own:
            later = stamps[stamps >= start]
            if later.size:
                lag.append((int(later[0]) - int(start)) / 1e6)
        bursts = []                     # runs of missing stamps less than 5 ms apart
        if missing.size:
            cut = np.flatnonzero(np.diff(missing) > 5_000_000) + 1
            for part in np.split(missing, cut):
                bursts.append((len(part), (int(part[0]) - self.wall0) / 1e9))
        bursts.sort(reverse=True)
        return {'own': near(own), 'other': near(other), 'restarts': int(own.size),
                'lag_ms': lag, 'bursts': len(bursts), 'largest': bursts[:5]}

    def node_counts(self, arm, answers):
        """Return the node's own account of the joint states it was offered (a dict).

        Per life of the node, between two of its /diagnostics counts (C0 at stamp w0, C1 at
        w1), with every message sent in (w0, w1]:

        - good: the joint states the publishers sent (all of them, the 0.5 s lead-in of each
          publisher included, up to its last report or any later stamp the node answered);
          answered: outputs_total C1 - C0, less the answers to bad states (``bad_answered``,
          seen by the monitor: there should be none); not answered (``good_unanswered``, what
          the drops target judges): good - answered good.  This is (good + bad) - answered -
          refused of the joint states, without the refused: the node counts refusals of every
          topic in one figure, and a bad joint state has no answer to give anyway;
        - lost: good + bad joint states - inputs_total, those that never reached the node's
          callback (its 10-deep queue overflowed, or the transport lost them);
        - bad messages, every topic: injected, refused (rejected_inputs_total C1 - C0),
          answered, and ``bad_lost``: neither, i.e. lost on the way (a 2.4 MB message is pushed
          out of a 10-deep queue while its fragments come in; the priming loses some so);
        - the monitor's misses: answered minus the answers it received with stamps in (w0, w1].

        The first life counts from zero (C0 = 0, w0 = -inf): its model was loaded before the
        publishers started and nothing was injected before.  A respawned life counts from its
        first counts after its first answer.  A life ends at its counts published 50 ms after
        the publishers stopped (then every state sent is in), or at its last counts before it
        died.  Only those two are exact: a start or end at a running stream misplaces the few
        states queued in the node then (``exact`` False).
        """
        sent = self.sent_stamps(arm, np.unique(answers), counted=False)
        walls = np.array([w for w, _ in arm.injected], dtype=np.int64)
        js = np.array([topic == 'joint_states' for _, topic in arm.injected], dtype=bool)
        bad_stamps = np.fromiter(self.bad_stamps, dtype=np.int64)
        keys = ('good', 'bad', 'side', 'answered', 'rejected', 'inputs', 'received',
                'bad_answered')
        out = dict.fromkeys(keys, 0)
        out.update(lives=0, exact=True)
        zero = {'inputs_total': 0, 'outputs_total': 0, 'rejected_inputs_total': 0}
        for life in arm.lives:
            snaps = life['diag']
            if life['zero_base']:
                base = (-1 << 62, zero)
            else:
                first = life.get('first_stamp')
                later = [snap for snap in snaps if first is not None and snap[0] >= first]
                base = later[0] if len(later) > 1 else None
            if base is None or not snaps or snaps[-1][0] <= base[0]:
                out['exact'] = False        # a life without two counts: not in the figures
                continue
            (w0, c0), (w1, c1) = base, snaps[-1]
            out['exact'] &= life['zero_base'] and life.get('final', False)
            inside = (walls > w0) & (walls <= w1)
            out['good'] += int(((sent > w0) & (sent <= w1)).sum())
            out['bad'] += int((inside & js).sum())
            out['side'] += int((inside & ~js).sum())
            for key, count in (('answered', 'outputs_total'), ('inputs', 'inputs_total'),
                               ('rejected', 'rejected_inputs_total')):
                out[key] += c1[count] - c0[count]
            mine = answers[(answers > w0) & (answers <= w1)]
            out['received'] += len(mine)
            out['bad_answered'] += int(np.isin(mine, bad_stamps).sum())
            out['lives'] += 1
        out['offered'] = out['good'] + out['bad']
        out['good_unanswered'] = out['good'] - (out['answered'] - out['bad_answered'])
        out['lost'] = out['offered'] - out['inputs']
        out['bad_lost'] = out['bad'] + out['side'] - out['rejected'] - out['bad_answered']
        out['missed'] = out['answered'] - out['received']
        return out

    def rss_growth(self, life):
        """Return (RSS MB after warm-up, at the end, minutes, MB in the last half, MB series).

        The series: the RSS at every tenth of the time after the warm-up.  The warm-up starts
        at the end of the priming (else at the node's first answer).
        """
        start = (life.get('primed') or (None, None, life['first_answer']))[2]
        if start is None:
            return None
        samples = [(t, mb) for t, mb in life['rss'] if t >= start + self.args.warmup]
        if len(samples) < 2:
            return None
        middle = (samples[0][0] + samples[-1][0]) / 2
        half = [mb for t, mb in samples if t >= middle]
        series = [samples[round(i * (len(samples) - 1) / 10)][1] for i in range(11)]
        return (samples[0][1], samples[-1][1], (samples[-1][0] - samples[0][0]) / 60.0,
                half[-1] - half[0], series)
