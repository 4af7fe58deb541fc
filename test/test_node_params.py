"""The parameter table: validation, and config/rnea.yaml holding exactly its defaults."""

import math
import os

import pytest
from rnea_ros.node import params as node_params
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _yaml(name):
    with open(os.path.join(ROOT, 'config', name), encoding='utf-8') as f:
        text = f.read()
    return text, yaml.safe_load(text)['/**']['ros__parameters']


def test_rnea_yaml_holds_every_default_and_documents_the_unset_ones():
    text, values = _yaml('rnea.yaml')
    for spec in node_params.PARAMETERS:
        if spec.default is None:
            assert f'# {spec.name}:' in text, f'{spec.name} is not documented in rnea.yaml'
            assert spec.name not in values
        else:
            assert values[spec.name] == spec.default, spec.name
    assert set(values) <= set(node_params.SPECS)


def test_gravity_compensation_yaml_sets_only_declared_valid_parameters():
    _, values = _yaml('gravity_compensation.yaml')
    assert values['mode'] == 'gravity_compensation'
    assert values['enabled'] is False and values['ramp_time'] > 0
    for name, value in values.items():
        assert name in node_params.SPECS
        assert node_params.check_value(name, value) is None, name


def test_every_default_passes_its_own_check():
    for spec in node_params.PARAMETERS:
        assert node_params.check_value(spec.name, spec.default) is None, spec.name


@pytest.mark.parametrize('name, value, reason', [
    ('mode', 'torque', 'must be one of'),
    ('rate', -1.0, 'must be in [0.0, 10000.0]'),
    ('rate', math.nan, 'finite'),
    ('desired_timeout', 0.0, 'must be in'),
    ('gravity', [0.0, 0.0], 'exactly 3'),
    ('gravity', [0.0, 0.0, math.inf], 'finite'),
    ('kp', [-1.0], 'every element must be in'),
    ('max_effort', [1.0, -2.0], 'every element must be in'),
    ('command_joints', ['a', 'a'], 'twice'),
    ('command_joints', ['a', ''], 'non-empty'),
])
def test_invalid_values_are_refused_with_a_reason(name, value, reason):
    assert reason in node_params.check_value(name, value)


def test_model_dependent_checks_need_the_joint_names():
    joints = ('j1', 'j2', 'j3')
    assert node_params.check_value('kp', [1.0, 2.0]) is None
    assert "one per model joint in this order: ['j1', 'j2', 'j3']" in \
        node_params.check_value('kp', [1.0, 2.0], joints)
    assert node_params.check_value('kd', [1.0, 2.0, 3.0], joints) is None
    assert "lacks: ['x']" in node_params.check_value('command_joints', ['j1', 'x'], joints)


def test_per_joint_broadcasts_one_value_and_fills_unset():
    assert list(node_params.per_joint([2.0], 3, 0.0)) == [2.0, 2.0, 2.0]
    assert list(node_params.per_joint(None, 2, math.inf)) == [math.inf, math.inf]
    with pytest.raises(ValueError):
        node_params.per_joint([1.0, 2.0], 3, 0.0)
