"""Description records: the links and joints a model is built from, whatever the format.

The URDF reader (:mod:`rnea_ros.core.urdf`), Khalil's modified Denavit-Hartenberg tables
(:mod:`rnea_ros.khalil.mdh`) and payloads (:mod:`rnea_ros.core.payload`) all produce these
records; :class:`~rnea_ros.core.model.RobotModel` is built from them.  Units: kg, m, rad, N, N m.
"""

from dataclasses import dataclass, field
import math

import numpy as np

from rnea_ros.core.spatial import rpy_to_matrix


@dataclass
class LinkSpec:
    """A link: mass, centre of mass and rotational inertia about the COM, in link axes."""

    name: str
    mass: float = 0.0
    com: tuple = (0.0, 0.0, 0.0)
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))


@dataclass
class JointSpec:
    """A joint: the pose of its frame (= child link frame at q = 0) in the parent link frame.

    ``effort`` and ``velocity`` are the URDF limits (inf = no limit); ``mimic`` is
    (driver joint, multiplier, offset); ``damping`` and ``friction`` the URDF ``<dynamics>``.
    """

    name: str
    type: str  # noqa: A003 - the URDF attribute's name
    parent: str
    child: str
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    translation: tuple = (0.0, 0.0, 0.0)
    axis: tuple = (1.0, 0.0, 0.0)
    lower: float = -math.inf
    upper: float = math.inf
    effort: float = math.inf
    velocity: float = math.inf
    mimic: tuple = None        # (driver joint, multiplier, offset)
    damping: float = 0.0
    friction: float = 0.0


def spec_from_urdf_origin(origin):
    """Return (rotation, translation) of a urdf_parser_py Pose (None = identity)."""
    if origin is None:
        return np.eye(3), (0.0, 0.0, 0.0)
    xyz = origin.xyz if origin.xyz is not None else (0.0, 0.0, 0.0)
    rpy = origin.rpy if origin.rpy is not None else (0.0, 0.0, 0.0)
    return rpy_to_matrix(rpy), tuple(float(v) for v in xyz)
