"""The ``rnea-ros`` command: robot dynamics from the shell, no ROS needed.

``rnea-ros torques --urdf FILE [--q ...] [--qd ...] [--qdd ...] [--floating-base] [--json]``
prints the joint efforts by name (gravity compensation when only q is given).  Values are given
in model order (``--q 0 -0.5 0 -2 0 1.5 0.8 0 0``, commas allowed) or by name
(``--q panda_joint2=-0.5 panda_joint4=-2``; joints not named are 0).

``rnea-ros analyze BAG --urdf FILE [--out DIR] [--topic /joint_states]`` compares recorded joint
states with the model: residuals, friction and payload fit, plots (see
:mod:`rnea_ros.analysis.analyze`).

``rnea-ros observe BAG --urdf FILE [--thresholds ...]`` runs the momentum observer over a
recording: external torques, the collisions given thresholds would raise, threshold suggestions
(see :mod:`rnea_ros.analysis.observe`).

``rnea-ros identify BAG [BAG ...] --urdf NOMINAL --out IDENTIFIED.urdf`` identifies inertial
parameters, friction and rotor inertia; ``rnea-ros excite --urdf U --out traj.yaml`` designs the
excitation trajectory to record (see :mod:`rnea_ros.analysis.identify`).
"""

import json
import sys

import numpy as np

from rnea_ros.analysis import analyze as analysis
from rnea_ros.analysis import arguments as arg
from rnea_ros.analysis import identify as identification
from rnea_ros.analysis import observe as observation
from rnea_ros.core.checks import coordinate_name
from rnea_ros.core.crba import massless_joint_warning
from rnea_ros.core.dynamics import inverse_dynamics
from rnea_ros.core.layout import DEFAULT_GRAVITY
from rnea_ros.core.model import RobotModel


def parse_values(tokens, model, velocity, what):
    """Return a vector from CLI tokens: numbers in model order, or name=value pairs."""
    n = model.nv if velocity else model.nq
    out = np.zeros(n)
    if not velocity and model.floating_base:
        out[6] = 1.0                               # identity quaternion
    if not tokens:
        return out
    items = [t for token in tokens for t in token.replace(',', ' ').split()]
    names = [coordinate_name(model, i, velocity) for i in range(n)]
    if all('=' in t for t in items):
        for item in items:
            name, _, value = item.partition('=')
            if name not in names:
                raise ValueError(f'{what}: unknown joint {name!r}; joints: {", ".join(names)}')
            out[names.index(name)] = float(value)
        return out
    if any('=' in t for t in items):
        raise ValueError(f'{what}: give either {n} numbers or name=value pairs, not both')
    if len(items) != n:
        raise ValueError(f'{what}: expected {n} values ({", ".join(names)}), got {len(items)}')
    return np.array([float(t) for t in items])


def torques(args):
    """Print the efforts for the state given on the command line; return the exit code."""
    model = RobotModel.from_urdf_file(args.urdf, floating_base=args.floating_base)
    q = parse_values(args.q, model, False, '--q')
    qd = parse_values(args.qd, model, True, '--qd')
    qdd = parse_values(args.qdd, model, True, '--qdd')
    gravity = None if args.gravity is None else [float(g) for g in args.gravity]
    with np.errstate(over='ignore', invalid='ignore'):
        tau = inverse_dynamics(model, q, qd, qdd, gravity=gravity)
    if not np.isfinite(tau).all():
        raise ValueError('the efforts overflow (not finite) for these inputs: are the '
                         'velocities, accelerations or gravity physical?')
    massless = massless_joint_warning(model)        # the rule the node applies too
    for warning in list(model.warnings) + ([massless] if massless else []):
        # after the efforts: an error is then the only line on stderr
        print(f'rnea-ros: warning: {warning}', file=sys.stderr)
    names = [coordinate_name(model, i, True) for i in range(model.nv)]
    if args.json:
        print(json.dumps({'robot': model.name, 'effort': dict(zip(names, tau.tolist()))},
                         indent=2))
        return 0
    print(f'{model!r}')
    width = max((len(n) for n in names), default=5)
    print(f'{"joint":<{width}}  {"effort":>12}  unit')
    floating = 6 if model.floating_base else 0
    for i, (name, value) in enumerate(zip(names, tau)):
        if i < floating:
            unit = 'N' if i < 3 else 'N m'
        else:
            unit = 'N' if model.joint_types[i - floating] == 'prismatic' else 'N m'
        print(f'{name:<{width}}  {value:12.6f}  {unit}')
    return 0


def build_parser():
    """Return the argument parser of ``rnea-ros``."""
    parser = arg.OneLineParser(prog='rnea-ros', description=__doc__.split('\n')[0])
    sub = parser.add_subparsers(dest='command', required=True)
    p = sub.add_parser('torques', help='joint efforts for a state (gravity compensation by '
                                       'default)')
    p.add_argument('--urdf', required=True, type=arg.URDF, help='URDF file')
    for option, what in (('--q', 'positions (rad, m)'), ('--qd', 'velocities (rad/s, m/s)'),
                         ('--qdd', 'accelerations (rad/s^2, m/s^2)')):
        p.add_argument(option, nargs='*', type=arg.STATE_VALUES,
                       help=f'{what}, any sign: numbers in model order or JOINT=value; '
                       'default 0')
    p.add_argument('--gravity', nargs=3, metavar=('GX', 'GY', 'GZ'), type=arg.FINITE,
                   help='gravity in the root frame, m/s^2, any sign (0 0 0: none; default {} {} '
                   '{})'.format(*DEFAULT_GRAVITY))
    p.add_argument('--floating-base', action='store_true',
                   help='free-flyer base: q starts with x y z qx qy qz qw')
    p.add_argument('--json', action='store_true', help='print JSON')
    p.set_defaults(func=torques)
    p = sub.add_parser('analyze', help='recorded joint states (rosbag2) against the model: '
                                       'residuals, friction and payload fit, plots')
    analysis.add_arguments(p)
    p.set_defaults(func=analysis.run)
    p = sub.add_parser('observe', help='momentum observer over a recording: external torques '
                                       'and collisions, to tune thresholds')
    observation.add_arguments(p)
    p.set_defaults(func=observation.run)
    p = sub.add_parser('identify', help='identify inertial parameters, friction and rotor '
                                        'inertia from recordings; write an identified URDF')
    identification.add_identify_arguments(p)
    p.set_defaults(func=identification.run_identify)
    p = sub.add_parser('excite', help='design an excitation trajectory (Fourier series) for '
                                      'identification')
    identification.add_excite_arguments(p)
    p.set_defaults(func=identification.run_excite)
    return parser


def main(argv=None):
    """Run the command line; errors are printed as one line and exit with status 2.

    Values are checked while the command line is parsed, and what a run raises on bad input
    is caught at the boundary (:func:`rnea_ros.analysis.arguments.run_command`).
    """
    return arg.run_command(build_parser(), argv)


if __name__ == '__main__':
    sys.exit(main())
