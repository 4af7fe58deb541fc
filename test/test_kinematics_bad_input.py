"""coriolis_matrix, frame_placement and frame_jacobian refuse bad inputs with clear errors."""

import numpy as np
import pytest

from rnea_ros import (coriolis_matrix, frame_jacobian, frame_placement, RobotModel,
                      Workspace)
from robots import urdf_path


@pytest.fixture(scope='module', params=[False, True], ids=['fixed', 'floating'])
def ur5(request):
    return RobotModel.from_urdf_file(urdf_path('ur5'), floating_base=request.param)


def state(model):
    q = np.full(model.nq, 0.3)
    if model.floating_base:
        q[3:7] = [0.0, 0.0, 0.0, 1.0]
    return q, np.full(model.nv, 0.2)


def calls(model, q, qd, link='tool0'):
    """Return the three functions as calls with the same state."""
    return (lambda: coriolis_matrix(model, q, qd), lambda: frame_placement(model, q, link),
            lambda: frame_jacobian(model, q, link, 'WORLD'))


@pytest.mark.parametrize('bad', [np.nan, np.inf, -np.inf])
def test_non_finite_q_names_the_coordinate(ur5, bad):
    q, qd = state(ur5)
    q[-2] = bad
    for call in calls(ur5, q, qd):
        with pytest.raises(ValueError, match=rf'q\[{ur5.nq - 2}\] \(wrist_2_joint\) is .*finite'):
            call()


def test_non_finite_qd_names_the_coordinate(ur5):
    q, qd = state(ur5)
    qd[0] = np.nan
    name = 'base_vx' if ur5.floating_base else 'shoulder_pan_joint'
    with pytest.raises(ValueError, match=rf'qd\[0\] \({name}\) is nan'):
        coriolis_matrix(ur5, q, qd)


def test_wrong_lengths_say_the_expected_shape(ur5):
    q, qd = state(ur5)
    for call in calls(ur5, q[:-1], qd):
        with pytest.raises(ValueError, match=rf'q has shape \({ur5.nq - 1},\), expected'):
            call()
    with pytest.raises(ValueError, match=rf'qd has shape \({ur5.nv + 1},\), expected'):
        coriolis_matrix(ur5, q, np.append(qd, 0.0))
    with pytest.raises(ValueError, match='must be a vector'):
        frame_placement(ur5, 'abc', 'tool0')


def test_unknown_link_is_named(ur5):
    q, qd = state(ur5)
    for call in calls(ur5, q, qd, link='gripper_tip')[1:]:
        with pytest.raises(ValueError, match="has no link 'gripper_tip'"):
            call()
    with pytest.raises(ValueError, match='has no link'):
        frame_placement(ur5, q, ['tool0'])


def test_unknown_reference_is_refused(ur5):
    q, _ = state(ur5)
    with pytest.raises(ValueError, match='reference must be one of LOCAL, WORLD, '
                                         "LOCAL_WORLD_ALIGNED, got 'local'"):
        frame_jacobian(ur5, q, 'tool0', 'local')


def test_zero_quaternion_and_foreign_workspace_are_refused(ur5):
    q, qd = state(ur5)
    other = Workspace(RobotModel.from_urdf_file(urdf_path('panda')))
    for fn in (lambda ws: coriolis_matrix(ur5, q, qd, ws=ws),
               lambda ws: frame_placement(ur5, q, 'tool0', ws=ws),
               lambda ws: frame_jacobian(ur5, q, 'tool0', ws=ws)):
        with pytest.raises(ValueError, match='workspace of a model with'):
            fn(other)
        assert np.all(np.isfinite(fn(Workspace(ur5))))
    if ur5.floating_base:
        q[3:7] = 0.0
        for call in calls(ur5, q, qd):
            with pytest.raises(ValueError, match='quaternion'):
                call()


def test_lists_are_accepted_like_arrays(ur5):
    q, qd = state(ur5)
    assert np.array_equal(coriolis_matrix(ur5, list(q), list(qd)), coriolis_matrix(ur5, q, qd))
    assert np.array_equal(frame_jacobian(ur5, list(q), 'tool0'), frame_jacobian(ur5, q, 'tool0'))
    assert np.array_equal(frame_placement(ur5, list(q), 'tool0'),
                          frame_placement(ur5, q, 'tool0'))
