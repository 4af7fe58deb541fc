"""Random MDH tables and smooth trajectories shared by the Khalil tests."""

import numpy as np

from rnea_ros.khalil.mdh import com_to_khalil, make_table


def random_inertial(rng):
    """Return Khalil's inertial columns of a random physically consistent link."""
    m = rng.uniform(0.5, 3.0)
    A = rng.normal(size=(3, 3))
    S = 0.05 * A @ A.T + 0.01 * np.eye(3)                  # second moment of the mass
    M, MS, J = com_to_khalil(m, rng.normal(size=3) * 0.1, np.trace(S) * np.eye(3) - S)
    return {'M': M, 'MX': MS[0], 'MY': MS[1], 'MZ': MS[2], 'XX': J[0, 0], 'XY': J[0, 1],
            'XZ': J[0, 2], 'YY': J[1, 1], 'YZ': J[1, 2], 'ZZ': J[2, 2]}


def random_tree(rng, stiffness=False):
    """Return a random tree table: branches, gamma and b, prismatic joints, a fixed frame."""
    rows = []
    for j, (a, sigma) in enumerate([(0, 0), (1, 0), (2, 1), (2, 0), (4, 2), (1, 0), (6, 1)],
                                   start=1):
        row = {'j': j, 'a': a, 'sigma': sigma, 'mu': int(sigma < 2), 'gamma': rng.normal(),
               'b': 0.2 * rng.normal(), 'alpha': rng.normal(), 'd': 0.3 * rng.normal(),
               'theta': rng.normal(), 'r': 0.2 * rng.normal(), **random_inertial(rng)}
        if sigma < 2:
            row.update(Ia=rng.uniform(0.0, 0.1), Fv=rng.uniform(0.0, 0.5),
                       Fs=rng.uniform(0.0, 0.5))
            if stiffness:
                row.update(K=rng.uniform(100.0, 1000.0))
        rows.append(row)
    return make_table(rows, name='random_tree')


class Sines:
    """A joint trajectory q(t) = c + a sin(w t + phi) with exact derivatives of any order."""

    def __init__(self, rng, n, amplitude=0.5, speed=(0.5, 2.0)):
        """Draw offsets, amplitudes, frequencies and phases for n joints."""
        self.c = rng.uniform(-1.0, 1.0, n)
        self.a = rng.uniform(0.2, 1.0, n) * amplitude
        self.w = rng.uniform(*speed, n)
        self.phi = rng.uniform(0.0, 2 * np.pi, n)

    def __call__(self, t, k=0):
        """Return the k-th time derivative at t."""
        out = self.a * self.w ** k * np.sin(self.w * t + self.phi + k * np.pi / 2)
        return out + self.c if k == 0 else out

    def derivatives(self, t, order=4):
        """Return [q, dq, ..., d^order q] at t."""
        return [self(t, k) for k in range(order + 1)]
