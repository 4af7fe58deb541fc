"""Node parameters of :mod:`rnea_ros.node.observer` (no ROS): momentum observer and collisions.

:mod:`rnea_ros.node.params` adds these entries to the node's parameter table (whose
``normalise`` reads YAML's bare ``off``, a boolean false, as the choice 'off' of
``collision_reaction``); :func:`check_observer_value` holds the check the table cannot express
(the wrench frame against the model's links).
"""

REACTIONS = ('off', 'zero', 'hold', 'float')


def _spec(name, kind, default, description, **extra):
    """Return the keyword arguments of one node_params.ParamSpec."""
    return dict(name=name, kind=kind, default=default, description=description, **extra)


# Parameter table entries (node_params.ParamSpec keyword arguments), added to the node's table.
PARAMETERS = (
    _spec('observer_enabled', 'bool', False,
          'Run the generalized-momentum observer on the measured efforts of joint_states: '
          'publishes ~/external_torques, ~/external_wrench (with external_wrench_frame) and '
          '~/collision (with collision_thresholds).'),
    _spec('observer_gains', 'double_array', [200.0],
          'Observer gain K per joint in 1/s (one value for all joints or one per model joint): '
          'the external torque estimate follows the true one as a first-order filter with '
          'time constant 1/K (K = 200: 5 ms, 98 % of a step after 20 ms); higher K is faster '
          'and noisier.', low=0.1, high=1e4),
    _spec('observer_effort_sampling', 'string', 'instant',
          'How the measured effort of a joint state relates to time: instant (read at the '
          'stamp: a torque sensor or a motor current) or held (applied over the step that '
          'ends at the stamp: a simulator or a drive reporting its last command).',
          choices=('instant', 'held')),
    _spec('observer_max_gap', 'double', 0.1,
          'Longest gap in s between two usable joint states that the observer bridges; a '
          'longer gap (or time going back) restarts it from zero.', low=0.001, high=10.0),
    _spec('collision_thresholds', 'double_array', [],
          'Collision threshold per joint on |external torque| in N m or N (one value for all '
          'joints or one per model joint). []: no collision detection. Tune them on a '
          'recording with `rnea-ros observe BAG --urdf ... --params PARAMS.yaml`; keep each '
          "above its joint's Coulomb jump Fs+ + Fs- (a fast velocity reversal shows up to "
          'that).', low=1e-6, high=1e9),
    _spec('collision_hysteresis', 'double', 0.2,
          'A collision ends when every |external torque| is below (1 - hysteresis) times its '
          'threshold.', low=0.0, high=0.99),
    _spec('collision_min_duration', 'double', 0.005,
          'Seconds a joint must stay above its threshold before a collision is raised.',
          low=0.0, high=10.0),
    _spec('collision_reaction', 'string', 'off',
          'What a collision does to command output until commands are re-enabled (enabled := '
          'true or ~/enable): off: nothing (events only); zero: one zero command, then none '
          '(enabled := false); hold: hold the position at the collision (computed torque with '
          'kp, kd around it, zero velocity); float: gravity compensation only.',
          choices=REACTIONS),
    _spec('external_wrench_frame', 'string', '',
          'Link (any URDF link, also one merged over fixed joints, e.g. a tool frame) whose '
          'external wrench is published on ~/external_wrench: the wrench of the environment '
          'on that link, in the link frame about its origin, from r = J^T F. '
          "'': no wrench."),
    _spec('external_wrench_rate', 'double', 100.0,
          'Rate in Hz at which ~/external_wrench is computed and sent (while it has '
          'subscribers), from the external torques of that cycle; 0: every cycle. The '
          'external torques are sent every cycle.', low=0.0, high=10000.0),
    _spec('external_wrench_damping', 'double', 0.05,
          'Damping of the least squares r = J^T F near singularities: exact while the smallest '
          'singular value of J exceeds it, the gain is bounded by 1/damping inside.',
          low=0.0, high=100.0),
)
PER_JOINT_PARAMETERS = ('observer_gains', 'collision_thresholds')
NAMES = tuple(entry['name'] for entry in PARAMETERS)


def check_observer_value(name, value, link_names=None):
    """Return why ``value`` is invalid for an observer parameter, or None.

    ``link_names``: the current model's links (None: no model yet, frame not checked).
    """
    if name == 'external_wrench_frame' and value and link_names is not None and \
            value not in link_names:
        return (f'external_wrench_frame {value!r} is not a link of the model; links: '
                f'{sorted(link_names)}')
    return None
