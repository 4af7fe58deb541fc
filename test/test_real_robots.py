"""Issue 28 on real robots: default ``rnea-ros identify`` against the URDF and the authors' model.

The recordings (KUKA LWR4+, Kinova Gen3) are read from ``../shared/realdata`` beside the
repository (or ``$RNEA_REALDATA``) and never copied; where the folder is absent these tests
skip and say so.  :mod:`real_robots` writes the bags (nothing cleaned), runs identify with its
defaults on the training runs and evaluates the three models on the held-out run with the
dataset's own stored q, qd, qdd (edges trimmed), torque in the URDF sign.

Every fold of :data:`real_robots.FOLDS` runs here: all eight (KUKA 1-to-3, 3-to-1, 1+2-to-3;
Kinova leave one out) take about 20 s on two busy cores once numba's kernels are compiled, about
2 minutes in a fresh tree that compiles them (the runs are 10 to 25 s long; identify takes 1 to 4
s a fold), so no subset of folds is needed.

Targets (issue 28): per arm, identified <= 1.0 x the nominal URDF on every joint, and <= 1.0 x
the authors' model on every joint where it counts (it was not fitted on the predicted run),
the RMS pooled over the arm's held-out predictions as the issue measured them
(:func:`real_robots.pooled_failures`); asserted.  Each fold is also held to the same bound on
its own, a stricter reading: :data:`KNOWN_FAILURES` lists the joints today's engine misses
there (measured); they are expected failures (xfail) until the engine meets them, and such a
test fails as soon as a listed joint meets its target, so that the list is emptied as the
engine improves (a strict xfail, per joint).  Joints not listed are asserted.
"""

import os

import numpy as np
import pytest
import real_robots as rr

needs_data = pytest.mark.skipif(rr.folder() is None, reason=rr.MISSING)

# (fold, reference): joints over 1.0 x on the current engine (2026-12-07, main with the joint
# torque sensor crosstalk candidate, chosen on every Kinova fold; ratios in the comment).  All
# are Kinova folds; joint 1 predicting run 1 is that run's mean error (the offsets drift from
# run to run: up to 0.9 N m on joint 1, per the README of ../shared/realdata/kinova_gen3).
# The target holds on every other joint and fold.
KNOWN_FAILURES = {
    ('kinova_gen3:2+3+4+5-to-1', 'urdf'): ('joint_1',),                           # 1.13
    ('kinova_gen3:2+3+4+5-to-1', 'authors'): ('joint_1',),                        # 1.13
    ('kinova_gen3:1+3+4+5-to-2', 'authors'): ('joint_6',),                        # 1.13
    ('kinova_gen3:1+2+3+5-to-4', 'authors'): ('joint_3',),                        # 1.06
}

AUTHORS_FOLDS = [f for f in rr.FOLDS if f[2] not in rr.ROBOTS[f[0]].authors_trained]


def fold_id(fold):
    """Return a test id of a fold."""
    return rr.fold_name(*fold)


@pytest.fixture(scope='module')
def fold_results(tmp_path_factory):
    """Return fold -> :class:`real_robots.Fold`, each identified once (bags written once)."""
    if rr.folder() is None:
        pytest.skip(rr.MISSING)
    work = str(tmp_path_factory.mktemp('identify'))
    cache = {}
    with rr.Bags() as bags:
        def get(fold):
            if fold not in cache:
                cache[fold] = rr.run_fold(*fold, bags, work)
            return cache[fold]
        yield get


def check_target(fold, reference):
    """Assert identified <= 1.0 x ``reference`` on every joint, known failures as xfail."""
    over = {name: ratio for name, ref, ratio in fold.failures() if ref == reference}
    known = set(KNOWN_FAILURES.get((fold.label, reference), ()))
    table = '\n'.join(fold.table())
    unexpected = {name: round(r, 3) for name, r in over.items() if name not in known}
    assert not unexpected, (f'{fold.label}: identified > 1.0 x {reference} on {unexpected}\n'
                            f'{table}')
    met = sorted(known - set(over))
    assert not met, (f'{fold.label}: {met} now meet the target against {reference}: remove '
                     f'them from KNOWN_FAILURES\n{table}')
    if known:
        pytest.xfail(f'issue 28, engine: {fold.label} identified / {reference} '
                     + ', '.join(f'{n} {r:.2f}' for n, r in sorted(over.items())))


@needs_data
@pytest.mark.parametrize('fold', rr.FOLDS, ids=fold_id)
def test_identified_is_no_worse_than_the_nominal_urdf_on_any_joint(fold_results, fold):
    check_target(fold_results(fold), 'urdf')


@needs_data
@pytest.mark.parametrize('fold', AUTHORS_FOLDS, ids=fold_id)
def test_identified_is_no_worse_than_the_authors_model_on_any_joint(fold_results, fold):
    check_target(fold_results(fold), 'authors')


@needs_data
@pytest.mark.parametrize('robot', list(rr.ROBOTS))
def test_pooled_over_an_arms_held_out_runs_identified_is_no_worse_on_any_joint(fold_results,
                                                                               robot):
    folds = [fold_results(f) for f in rr.FOLDS if f[0] == robot]
    over = rr.pooled_failures(folds)
    tables = '\n'.join(line for f in folds for line in f.table())
    assert not over, f'{robot}: pooled over its held-out runs, over 1.0 x: {over}\n{tables}'


@needs_data
def test_identify_ran_with_defaults_and_wrote_a_node_model(fold_results):
    """The command has only the bags, the URDF and the outputs; the parameters fit the joints."""
    fold = fold_results(rr.FOLDS[0])
    words = fold.identified.command.split()
    options = {w for w in words if w.startswith('--')}
    assert options <= {'--urdf', '--out', '--params-out', '--json', '--force'}, words
    assert fold.identified.params['friction_joints'] == fold.names
    assert np.all(np.isfinite(fold.rms['identified']))


@needs_data
def test_the_cutoffs_shown_are_the_fits_and_the_validations_apart(fold_results):
    """The fit's cutoff per training bag is the one chosen; the validation stream's is its own."""
    fold = fold_results(rr.FOLDS[0])
    choice = fold.identified.summary['signals']['filter_choice']
    bags = {f'{fold.robot}_{run}' for run in fold.train}
    for validation, key in ((False, 'chosen_hz'), (True, 'validation_hz')):
        cutoffs = fold.identified.cutoffs(validation)
        assert set(cutoffs) == bags
        for per_joint in cutoffs.values():
            assert set(per_joint.values()) == {choice[key]}


@needs_data
@pytest.mark.parametrize('robot, run', [('kinova_gen3', 5), ('kuka_lwr4', 3)])
@pytest.mark.parametrize('factor, named', [(-1.0, '--effort-scale -1'),
                                           (0.125, 'another unit')])
def test_a_real_recordings_sign_or_units_are_named_and_the_option_named_undoes_them(
        tmp_path, robot, run, factor, named):
    """Efforts in the stored Kinova sign (-1) or as currents (1/8) are named.

    ``--effort-scale 1/factor`` then gives the model of the efforts in N m exactly (the factors
    are exact in binary).
    """
    def identify(bag, *options):
        work = tmp_path / f'out{len(list(tmp_path.iterdir()))}'
        work.mkdir()
        return rr.identify(robot, [bag], str(work), options)
    plain = identify(rr.write_bag(robot, run, str(tmp_path / 'nm')))
    odd_bag = rr.write_bag(robot, run, str(tmp_path / 'odd'), effort_factor=factor)
    odd = identify(odd_bag)
    said = ' '.join(odd.summary['warnings'] + odd.stderr.splitlines())
    assert named in said and '--effort-scale' in said, said
    undone = identify(odd_bag, '--effort-scale', f'{1.0 / factor:g}')
    assert set(undone.summary['effort_scale'].values()) == {1.0 / factor}
    assert named not in ' '.join(undone.summary['warnings'])
    assert undone.params == plain.params
    assert undone.urdf == plain.urdf


@needs_data
@pytest.mark.parametrize('robot, train, predict', [('kinova_gen3', 5, 1), ('kuka_lwr4', 3, 1)])
def test_a_loggers_repeated_rows_are_dropped_and_its_stamp_jitter_barely_moves_the_model(
        tmp_path, robot, train, predict):
    """6 % repeated rows: each one found, and the held-out error the clean bag's.

    With the stamps jittered too (by up to 0.4 intervals): the held-out error at most 5 % above
    the clean bag's on any joint (measured: 0.95 to 1.02 times it).
    """
    _, _, rms = rr.faulty_fold(robot, [train], predict, str(tmp_path))
    (_, repeats), (_, jitter) = rr.LOGGER_FAULTS[:2]
    inserted, found, repeated = rr.faulty_fold(robot, [train], predict, str(tmp_path),
                                               **repeats)
    assert found == inserted > 0
    np.testing.assert_allclose(repeated, rms, rtol=1e-4)
    inserted, found, jittered = rr.faulty_fold(robot, [train], predict, str(tmp_path), **jitter)
    assert found == inserted
    assert np.all(jittered <= 1.05 * rms), jittered / rms


@needs_data
def test_the_kuka_motion_logged_raw_at_1khz_still_gives_a_model_better_than_the_urdf(tmp_path):
    """KUKA run 3 as a raw 1 kHz driver would log it, identified, predicting run 1.

    :func:`real_robots.raw_logger`: stamps 0.7 to 8.8 ms apart, position noise, velocity by
    differences, torque noise, 6 % repeated rows (all found).  Every joint still beats the URDF
    on the held-out run (measured 0.21 to 0.90 x), and stays within 25 % of the model identified
    from the stored 200 Hz bag (measured 0.85 to 1.12 x; 0.78 to 1.12 x over three other draws).
    """
    robot, train, predict = 'kuka_lwr4', 3, 1
    label, raw = rr.LOGGER_FAULTS[2]
    assert '1 kHz' in label
    _, _, stored = rr.faulty_fold(robot, [train], predict, str(tmp_path))
    inserted, found, rms = rr.faulty_fold(robot, [train], predict, str(tmp_path), **raw)
    urdf = rr.errors(robot, predict, {'urdf': rr.nominal_model(robot)})[0]['urdf']
    assert found == inserted > 0
    assert np.all(rms <= urdf), rms / urdf
    assert np.all(rms <= 1.25 * stored), rms / stored


# -- the harness itself -------------------------------------------------------------------------

def test_an_absent_folder_is_reported_by_name(monkeypatch, tmp_path):
    monkeypatch.setenv(rr.ENV, str(tmp_path))
    assert rr.folder() is None
    with pytest.raises(FileNotFoundError, match='../shared/realdata'):
        rr.loader()


def test_no_fold_predicts_a_run_it_trained_on_or_a_repeat_of_it():
    repeats = {'kuka_lwr4': ({1, 2},)}        # runs 1 and 2 repeat one trajectory
    for robot, train, predict in rr.FOLDS:
        assert predict not in train
        for same in repeats.get(robot, ()):
            assert not (predict in same and set(train) <= same), (robot, train, predict)
        assert rr.parse_fold(rr.fold_name(robot, train, predict)) == (robot, train, predict)


def test_offset_reach_is_the_held_out_error_less_a_training_runs_mean():
    """Fold.offset_reach: the RMS of (error - mean error on the best training run), exactly."""
    rng = np.random.default_rng(3)
    err = rng.normal(0.3, 0.2, (500, 2))                     # held-out (model - measured)
    train_mean = {2: np.array([0.5, -0.1]), 4: np.array([0.25, 0.05]), 5: np.array([0.0, 0.3])}
    rms = {k: np.sqrt(np.mean(err ** 2, axis=0)) for k in ('urdf', 'identified', 'authors')}
    mean = {k: err.mean(axis=0) for k in rms}
    fold = rr.Fold('kinova_gen3', (2, 4, 5), 1, ['a', 'b'], rms, None, err.shape[0], mean,
                   train_mean)
    for j in range(2):
        direct = {r: float(np.sqrt(np.mean((err[:, j] - m[j]) ** 2)))
                  for r, m in train_mean.items()}
        best = min(direct, key=direct.get)
        run, value = fold.offset_reach(j)
        assert run == best and value == pytest.approx(direct[best], rel=1e-12)
    assert rr.Fold('kinova_gen3', (2,), 1, ['a', 'b'], rms, None, 500, mean).offset_reach(0) \
        is None


def test_pooled_failures_are_the_rms_of_all_held_out_rows_and_skip_the_authors_own_run():
    """The pooled RMS is that of the folds' rows concatenated; a run the authors fitted is out."""
    rng = np.random.default_rng(5)
    errs = {run: {k: rng.normal(0.0, s, (n, 2)) for k, s in
                  (('urdf', 1.0), ('identified', 0.9), ('authors', 0.8 + 0.3 * (run == 5)))}
            for run, n in ((1, 300), (2, 500), (5, 400))}
    folds = [rr.Fold('kinova_gen3', (), run, ['a', 'b'],
                     {k: np.sqrt(np.mean(e ** 2, axis=0)) for k, e in err.items()}, None,
                     err['urdf'].shape[0]) for run, err in errs.items()]
    assert [f.authors_counted for f in folds] == [True, True, False]

    def direct(key, runs):
        return np.sqrt(np.mean(np.concatenate([errs[r][key] for r in runs]) ** 2, axis=0))
    every = rr.pooled(folds)
    for key in ('urdf', 'identified', 'authors'):
        np.testing.assert_allclose(every[key], direct(key, (1, 2, 5)), rtol=1e-12)
    over = {(name, ref): r for _, name, ref, r in rr.pooled_failures(folds)}
    assert set(over) == {(name, 'authors') for name in 'ab'}      # 0.9 > 0.8; < 1.0 (urdf)
    for j, name in enumerate('ab'):
        assert over[name, 'authors'] == pytest.approx(
            direct('identified', (1, 2))[j] / direct('authors', (1, 2))[j], rel=1e-12)


def test_the_harness_finds_identify_options_by_name():
    """--force is passed (a refusal would otherwise stop the comparison); no option is made up."""
    assert rr._has_option('--force') and rr._has_option('--effort-scale')
    assert not rr._has_option('--no-such-option')


def _read_back(bag):
    try:
        from rnea_ros.analysis.analyze import read_joint_states
    except ImportError:
        from rnea_ros.analysis.recordings import read_joint_states
    return read_joint_states(bag)


@needs_data
@pytest.mark.parametrize('robot, run', [('kuka_lwr4', 1), ('kinova_gen3', 5)])
def test_bags_hold_the_stored_arrays_unchanged(tmp_path, robot, run):
    """Every row, stamps as stored, wrapped angles, velocities as stored, efforts in URDF sign."""
    bag = rr.write_bag(robot, run, str(tmp_path / 'bag'))
    t, names, Q, QD, E = _read_back(bag)
    raw = rr.loader().load(robot, run, convention='raw')
    assert list(names) == list(raw['joint_names'])
    np.testing.assert_allclose(t, raw['t_source'], rtol=0, atol=1e-6)
    np.testing.assert_allclose(np.diff(t), np.diff(raw['t_source']), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(Q, raw['q'])
    np.testing.assert_array_equal(QD, raw['qd'])
    sign = -1.0 if robot == 'kinova_gen3' else 1.0
    np.testing.assert_array_equal(E, sign * raw['tau'])


def _rms(a, b):
    return np.sqrt(np.mean((a - b) ** 2, axis=0))


@needs_data
@pytest.mark.parametrize('robot', list(rr.ROBOTS))
def test_the_trim_drops_the_edges_where_stored_accelerations_disagree(robot):
    """Stored qdd vs the derivative of stored qd: the dropped edges disagree 3x more."""
    for run in rr.ROBOTS[robot].runs:
        d = rr.load(robot, run)
        keep = rr.ROBOTS[robot].trim(d['t'])
        deviation = d['qdd'] - np.gradient(d['qd'], d['t'], axis=0)
        scale = np.sqrt(np.mean(d['qdd'][keep] ** 2))
        inside = np.sqrt(np.mean(deviation[keep] ** 2)) / scale
        edges = np.sqrt(np.mean(deviation[~keep] ** 2)) / scale
        assert edges > 3 * inside, (robot, run, inside, edges)


@needs_data
def test_kinova_torque_follows_the_urdf_only_with_its_sign_reversed():
    from rnea_ros.core.dynamics import inverse_dynamics_batch
    from rnea_ros.core.model import RobotModel
    model = RobotModel.from_urdf_file(rr.urdf_path('kinova_gen3'))
    for run in rr.ROBOTS['kinova_gen3'].runs:
        d = rr.load('kinova_gen3', run)
        tau = inverse_dynamics_batch(model, d['q'], d['qd'], d['qdd'])
        assert np.all(_rms(tau, d['tau']) < _rms(tau, -d['tau'])), run


@needs_data
def test_kinova_authors_friction_takes_up_the_offsets_of_joints_2_and_4():
    """Their law (offsets included) fits its own run 5 on every joint, and every run's offsets."""
    from rnea_ros.core.dynamics import inverse_dynamics_batch
    from rnea_ros.core.model import RobotModel
    rigid = RobotModel.from_urdf_file(rr.urdf_path('kinova_gen3'))
    for run in rr.ROBOTS['kinova_gen3'].runs:
        Q, QD, QDD, tau, names = rr.evaluation('kinova_gen3', run)
        ratio = (_rms(rr.authors_torque('kinova_gen3', Q, QD, QDD, names), tau)
                 / _rms(inverse_dynamics_batch(rigid, Q, QD, QDD), tau))
        assert ratio[1] < 0.25 and ratio[3] < 0.25, (run, ratio)
        if run in rr.ROBOTS['kinova_gen3'].authors_trained:
            assert np.all(ratio < 1.0), (run, ratio)


@needs_data
def test_kuka_authors_urdf_fits_the_shoulder_and_its_offset_misfits_joint_5():
    """Their inertials cut the loaded shoulder's error; their lwr_5 offset has the wrong sign."""
    from rnea_ros.core.dynamics import inverse_dynamics_batch
    from rnea_ros.core.model import RobotModel
    nominal = RobotModel.from_urdf_file(rr.urdf_path('kuka_lwr4'))
    theirs = RobotModel.from_urdf_file(rr.authors_file('kuka_lwr4'))
    for run in rr.ROBOTS['kuka_lwr4'].runs:
        Q, QD, QDD, tau, names = rr.evaluation('kuka_lwr4', run)
        rigid = _rms(inverse_dynamics_batch(theirs, Q, QD, QDD), tau)
        shoulder = names.index('lwr_1_joint')
        assert rigid[shoulder] < 0.5 * _rms(inverse_dynamics_batch(nominal, Q, QD, QDD),
                                            tau)[shoulder], run
        with_terms = _rms(rr.authors_torque('kuka_lwr4', Q, QD, QDD, names), tau)
        wrist = names.index('lwr_5_joint')
        assert with_terms[wrist] > 1.5 * rigid[wrist], run
        assert np.mean(with_terms < rigid) >= 0.5, (run, with_terms, rigid)


@needs_data
def test_kinova_authors_model_reproduces_their_own_torque_estimate_of_run_5():
    """Our reading of their friction solution (layout, law, sign) gives the torques they saved.

    They saved the torque of their model on run 5 with 6 significant digits; 1e-4 N m bounds
    that rounding on torques up to 25 N m.
    """
    d = rr.load('kinova_gen3', 5)
    names = [str(n) for n in d['joint_names']]
    theirs = np.loadtxt(os.path.join(rr.folder(), 'kinova_gen3', 'full_params_data',
                                     'friction_estimate_tau_5.csv'))
    ours = rr.authors_torque('kinova_gen3', d['q'], d['qd'], d['qdd'], names)
    assert np.abs(ours - theirs).max() < 1e-4
