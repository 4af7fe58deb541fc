"""Node parameters of :mod:`rnea_ros.node.observer` (no ROS): momentum observer and collisions.

:mod:`rnea_ros.node.params` adds these entries to the node's parameter table (whose
``normalise`` reads YAML's bare ``off``, a boolean false, as the choice 'off' of
``collision_reaction``); :func:`check_observer_value` holds the check the table cannot express
(the wrench frame against the model's links) and :func:`check_reversal_thresholds` the one
between two parameters (each reversal threshold >= its collision threshold).
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
    _spec('observer_filter', 'double', 0.0,
          'Low-pass K_f in 1/s on what the observer reports (0: none). Noise on the measured '
          'velocities reaches the external torques as about K x inertia x its standard '
          'deviation, unfiltered; K_f cuts that (K_f = 200 at 1 kHz: about 5x) for about 1/K_f '
          's more delay (the estimate then follows the external torque as a second-order '
          'filter).', low=0.0, high=1e4),
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
          'that), or gate them with collision_reversal_thresholds.', low=1e-6, high=1e9),
    _spec('collision_reversal_thresholds', 'double_array', [],
          'Collision threshold per joint in N m or N while that joint reverses (one value for '
          'all joints or one per model joint, each >= its collision_thresholds value): used while '
          '|joint velocity| < collision_reversal_band and for collision_reversal_hold s after, '
          'collision_thresholds when the joint moves. There the friction model is least right '
          '(the measured friction turns over a finite time), so the residual of a slow joint '
          'peaks up to its Coulomb jump Fs+ + Fs-: gating lets collision_thresholds sit just '
          'above the residual of the moving arm (smaller pushes detected) and this one above '
          'the peaks at reversals. Tune both on a recording (`rnea-ros observe` suggests '
          'them). []: not gated, collision_thresholds everywhere.', low=1e-6, high=1e9),
    _spec('collision_reversal_band', 'double', 0.1,
          'Speed in rad/s or m/s below which a joint counts as reversing (its '
          'collision_reversal_thresholds apply): cover the velocities over which the measured '
          "friction turns over (a few times the model's Coulomb band; 0.1 on a panda in "
          'MuJoCo). 0: never.', low=0.0, high=100.0),
    _spec('collision_reversal_hold', 'double', 0.02,
          'Seconds (joint state stamps) a joint keeps its reversal threshold after its speed '
          'rises above collision_reversal_band: the observer lags the true torque by its time '
          'constant 1/K and the friction settles after the reversal.', low=0.0, high=10.0),
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
PER_JOINT_PARAMETERS = ('observer_gains', 'collision_thresholds',
                        'collision_reversal_thresholds')
NAMES = tuple(entry['name'] for entry in PARAMETERS)
# The detector's thresholds: checked together (check_reversal_thresholds).
THRESHOLD_PARAMETERS = ('collision_thresholds', 'collision_reversal_thresholds')


def check_observer_value(name, value, link_names=None):
    """Return why ``value`` is invalid for an observer parameter, or None.

    ``link_names``: the current model's links (None: no model yet, frame not checked).
    """
    if name == 'external_wrench_frame' and value and link_names is not None and \
            value not in link_names:
        return (f'external_wrench_frame {value!r} is not a link of the model; links: '
                f'{sorted(link_names)}')
    return None


def check_reversal_thresholds(moving, reversal, joint_names=None):
    """Return why ``collision_reversal_thresholds`` do not fit ``collision_thresholds``, or None.

    ``moving``, ``reversal``: the two arrays (each already valid on its own: finite, > 0, and
    1 value or one per joint).  Each reversal threshold must be >= the collision threshold of
    its joint (the detector's own rule, :class:`rnea_ros.core.observer.CollisionDetector`).
    ``joint_names``: the model's joints, to name them (None: no model yet; two arrays of
    different lengths > 1 are then refused, they cannot both fit one model).  No collision
    thresholds ([]: no detection) accept any reversal thresholds, unused until they are set.
    """
    if not moving or not reversal:
        return None
    n = max(len(moving), len(reversal))
    if len(moving) not in (1, n) or len(reversal) not in (1, n):
        return (f'collision_reversal_thresholds has {len(reversal)} values and '
                f'collision_thresholds {len(moving)}: give each 1 value or one per model joint')
    if n == 1:
        names = ['all joints']
    elif joint_names is not None and len(joint_names) == n:
        names = list(joint_names)
    else:
        names = [f'entry {j}' for j in range(n)]
    moving = list(moving) * (n // len(moving))
    reversal = list(reversal) * (n // len(reversal))
    low = [(names[j], reversal[j], moving[j]) for j in range(n)
           if reversal[j] < moving[j]]
    if not low:
        return None
    shown = ', '.join(f'{name}: {r:g} < {m:g}' for name, r, m in low[:5])
    more = f' and {len(low) - 5} more' if len(low) > 5 else ''
    return (f'collision_reversal_thresholds must be >= collision_thresholds joint by joint '
            f'(the threshold while a joint reverses is the higher one): {shown}{more}; to '
            'change both, set them together (set_parameters_atomically) or one at a time, '
            'the reversal ones first when raising and last when lowering')
