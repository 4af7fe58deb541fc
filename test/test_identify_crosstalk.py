"""Joint torque sensor crosstalk in identification: chosen by held-out data, and deployed.

Simulated ground truth (:mod:`identification_data`): the perturbed panda whose torque sensors
read a few percent of the bending moments (:mod:`rnea_ros.core.sensor`, the model options
``sensor_crosstalk_u`` and ``sensor_crosstalk_w``), and the same robot without.  identify tries
the chosen friction law with the crosstalk terms and keeps them only when held-out equations
ask for them; the coefficients go to PARAMS.yaml and into the model the node builds.
"""

from identification_data import ARM, measured, perturbed_specs, random_excitation, states_along
import numpy as np
import pytest
from rnea_ros.analysis.cli import main
from rnea_ros.analysis.identification import identify
from rnea_ros.analysis.output import node_parameters
from rnea_ros.analysis.recordings import write_joint_states
from rnea_ros.core.dynamics import inverse_dynamics_batch
from rnea_ros.core.model import RobotModel
from rnea_ros.core.sensor import SENSOR_OPTIONS
from robots import urdf_path
import yaml

DURATION, RATE, NOISE = 20.0, 200.0, 0.02       # s, Hz, N m


@pytest.fixture(scope='module')
def case():
    """Return (nominal panda, truth with crosstalk, truth without, Q, QD, QDD)."""
    panda = RobotModel.from_urdf_file(urdf_path('panda'))
    links, joints, options = perturbed_specs('panda', 1)
    rng = np.random.default_rng(5)
    crosstalk = {what: {j: rng.uniform(-0.03, 0.03) for j in ARM} for what in SENSOR_OPTIONS}
    with_x = RobotModel.from_specs(links, joints, **options, **crosstalk)
    without = RobotModel.from_specs(links, joints, **options)
    traj = random_excitation(panda, ARM, 3, duration=DURATION)
    states = states_along(panda, traj, np.arange(0.0, DURATION, 1.0 / RATE))
    return (panda, with_x, without) + states


def identified(case, truth, crosstalk=True):
    panda, _, _, Q, QD, QDD = case
    E = measured(truth, Q, QD, QDD, NOISE, np.random.default_rng(1))
    return identify(panda, Q, QD, QDD, E, friction='coulomb', crosstalk=crosstalk)


def rows_by_name(result):
    return {row['name']: row for row in result.selection}


def test_a_simulated_crosstalk_is_chosen_and_its_coefficients_recovered(case):
    """Sensors reading up to 3 % of the bending moments: identify keeps the crosstalk terms.

    The coefficients come back within 0.005 of the truth's on every arm joint (the columns
    are the nominal model's moments, the truth's masses differ by up to 20 %), and the held-out
    score of the law with crosstalk is less than half the plain law's.
    """
    truth = case[1]
    result = identified(case, truth)
    assert result.friction_model.crosstalk
    assert result.friction_model.name == 'coulomb + crosstalk'
    np.testing.assert_allclose(result.sensor_crosstalk[:7], truth.sensor_crosstalk[:7],
                               atol=0.005)
    rows = rows_by_name(result)
    assert rows['coulomb + crosstalk']['score'] < 0.5 * rows['coulomb']['score']


def test_data_without_crosstalk_keeps_the_plain_law(case):
    """The same robot with ideal sensors: the crosstalk candidate is tried and not kept."""
    result = identified(case, case[2])
    rows = rows_by_name(result)
    assert 'coulomb + crosstalk' in rows and not rows['coulomb + crosstalk']['chosen']
    assert not result.friction_model.crosstalk
    assert not result.sensor_crosstalk.any()
    assert 'sensor_crosstalk_u' not in node_parameters(case[0], result)


def test_crosstalk_is_tried_only_when_asked(case):
    """``identify(..., crosstalk=False)`` (the in-memory default) has no crosstalk candidate."""
    result = identified(case, case[1], crosstalk=False)
    assert all(not name.endswith('+ crosstalk') for name in rows_by_name(result))
    assert not result.sensor_crosstalk.any()


def test_the_node_model_built_from_params_yaml_carries_the_crosstalk(case):
    """PARAMS.yaml -> node parameters -> the node's model: the same coefficients.

    And that model predicts the truth's efforts (which include the crosstalk) better than the
    same model with its crosstalk removed.
    """
    from rnea_ros.core.urdf import parse_urdf
    from rnea_ros.node.params import node_config, node_model
    panda, truth, _, Q, QD, QDD = case
    result = identified(case, truth)
    values = yaml.safe_load(node_parameters(panda, result))['/**']['ros__parameters']
    with open(urdf_path('panda'), encoding='utf-8') as f:
        description = parse_urdf(f.read())
    model = node_model(description, dict(node_config(values), floating_base=False))
    np.testing.assert_allclose(model.sensor_crosstalk, result.sensor_crosstalk, atol=1e-12)
    plain = node_model(description, dict(node_config(
        {k: v for k, v in values.items() if k not in SENSOR_OPTIONS}), floating_base=False))
    E = inverse_dynamics_batch(truth, Q, QD, QDD)

    def rms(m):
        return np.sqrt(np.mean((inverse_dynamics_batch(m, Q, QD, QDD) - E)[:, :7] ** 2))
    assert rms(model) < rms(plain)


def test_the_cli_tries_crosstalk_with_two_recordings_and_writes_it(case, tmp_path, capsys):
    """``rnea-ros identify`` and ``--crosstalk``: PARAMS.yaml holds the two arrays when kept.

    Two recordings of the crosstalk robot (two motions): tried and kept by default (auto).  One
    recording: not tried by default (its stretches are one motion), tried with ``always``.
    The text report lists the coefficients when they are kept.
    ``off``: never.
    """
    panda, truth = case[0], case[1]
    bags = []
    for k, seed in enumerate((3, 4)):
        traj = random_excitation(panda, ARM, seed, duration=DURATION)
        Q, QD, QDD = states_along(panda, traj, np.arange(0.0, DURATION, 1.0 / RATE))
        E = measured(truth, Q, QD, QDD, NOISE, np.random.default_rng(2 + k))
        bags.append(str(tmp_path / f'arm{k}'))
        t = 100.0 + np.arange(Q.shape[0]) / RATE
        write_joint_states(bags[-1], t, ARM, Q[:, :7], QD[:, :7], E[:, :7])
    cases = ((bags, [], True), (bags, ['--crosstalk', 'off'], False),
             (bags[:1], [], False), (bags[:1], ['--crosstalk', 'always'], True))
    for k, (inputs, extra, expected) in enumerate(cases):
        params = str(tmp_path / f'params{k}.yaml')
        code = main(['identify', *inputs, '--urdf', urdf_path('panda'), '--out',
                     str(tmp_path / f'id{k}.urdf'), '--params-out', params,
                     '--friction', 'coulomb', *extra])
        out = capsys.readouterr().out
        assert code == 0, (inputs, extra)
        assert ('torque sensor crosstalk u, w' in out) == expected, out
        with open(params, encoding='utf-8') as f:
            values = yaml.safe_load(f)['/**']['ros__parameters']
        assert all((name in values) == expected for name in SENSOR_OPTIONS), (inputs, extra)
