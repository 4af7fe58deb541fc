"""Node parameters of :mod:`rnea_ros.node.payload_estimation` (no ROS).

:mod:`rnea_ros.node.params` adds these entries to the node's parameter table.  They are read
when an estimation starts (``~/estimate_payload``); changing them meanwhile affects the next one.
"""

MODES = ('motion', 'poses')


def _spec(name, kind, default, description, **extra):
    """Return the keyword arguments of one node_params.ParamSpec."""
    return dict(name='payload_estimation.' + name, kind=kind, default=default,
                description=description, **extra)


# Parameter table entries (node_params.ParamSpec keyword arguments), added to the node's table.
PARAMETERS = (
    _spec('link', 'string', '',
          'Link that carries the payload to estimate (a link merged over fixed joints, such as '
          "a flange or tool frame, is fine: the result is in its frame). '' = payload_link, "
          'or else the child link of the last model joint.'),
    _spec('mode', 'string', 'motion',
          'motion: samples of slow motion (accelerations from the velocities, see '
          'acceleration_window) for duration seconds: mass, COM and, when excited, inertia. '
          'poses: the arm is held still in poses (each still for still_time): mass and COM '
          'only.', choices=MODES),
    _spec('duration', 'double', 5.0,
          'motion mode: seconds of joint-state stamps to collect.', low=0.1, high=3600.0),
    _spec('poses', 'double', 6.0,
          'poses mode: number of still poses to collect (whole number).', low=1.0, high=100.0),
    _spec('timeout', 'double', 120.0,
          'Seconds (steady clock) after the start at which the estimation ends with what it '
          'has (refused when that is not enough).', low=0.1, high=86400.0),
    _spec('sample_rate', 'double', 200.0,
          'motion mode: samples per second handed to the estimator (joint states beyond it are '
          'used only for the accelerations).', low=1.0, high=10000.0),
    _spec('acceleration_window', 'double', 0.1,
          'motion mode: seconds of joint states over which a straight-line fit of the '
          'velocities gives the acceleration, and positions, velocities and efforts are '
          'averaged with the matching weights (one filter for all, no lag).',
          low=0.005, high=1.0),
    _spec('still_time', 'double', 0.5,
          'poses mode: seconds a pose must be held to count (efforts and positions averaged '
          'over it).', low=0.01, high=60.0),
    _spec('still_tolerance', 'double', 0.002,
          'poses mode: largest motion of any joint (rad or m) while held still; a new pose must '
          'be at least 10 times this far from the previous one.', low=1e-6, high=1.0),
    _spec('forgetting', 'double', 1.0,
          'Forgetting factor of the recursive least squares in (0, 1]; 1 = all samples '
          'weigh the same.', low=0.5, high=1.0),
    _spec('mass_tolerance', 'double', 0.01,
          'Largest accepted sigma of the mass, relative (plus 0.005 kg).', low=1e-4, high=10.0),
    _spec('com_tolerance', 'double', 0.003,
          'Largest accepted sigma of each COM coordinate in m.', low=1e-5, high=10.0),
    _spec('effort_noise', 'double', 0.01,
          'Smallest effort noise (N m or N) assumed for the sigmas when the residual is '
          'smaller.', low=1e-6, high=1e3),
    _spec('auto_commit', 'bool', False,
          'Commit an accepted estimate to the model at once (payload_* parameters). Otherwise '
          'call ~/set_payload with no parameters to commit the last accepted estimate.'),
)
