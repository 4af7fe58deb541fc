"""Constants shared by the model, the workspace, the numba kernels and the public API.

Defined once here, read everywhere else:

- the default gravity (m/s^2, root frame, REP 103: z up) and Coulomb friction band;
- the columns of one row of the frozen model's tables ``RobotModel.reals`` / ``RobotModel.ints``
  (one row per body; the kernels read the same columns from ``RobotModel.kernel_model``);
- the columns of one row of a :class:`~rnea_ros.core.model.Workspace`: the RNEA rows ``ws`` and
  the articulated-body rows ``wa`` (RBDA Table 7.1's quantities per body);
- the status codes the kernels return instead of raising.
"""

DEFAULT_GRAVITY = (0.0, 0.0, -9.81)
COULOMB_BAND = 0.01   # default |qd| (rad/s or m/s) below which Coulomb friction is linear

# One row of RobotModel.reals (per body): placement XT = (R_T parent_R_joint, P_T translation),
# unit joint axis, spatial inertia about the body origin (MASS m, H = m c, I_O 3x3), ARMATURE
# (rotor inertia of the body's joint).
R_T, P_T, AXIS, MASS, H, I_O, ARMATURE, NREAL = 0, 9, 12, 15, 16, 19, 28, 29
# One row of RobotModel.ints (per body): parent body (-1 = world), joint kind, first index of
# the joint in q and in v, axis code.
PARENT, KIND, IQ, IV, AXIS_CODE, NINT = 0, 1, 2, 3, 4, 5
GENERAL_AXIS = 6   # AXIS_CODE: 0-2 = +x, +y, +z; 3-5 = -x, -y, -z; 6 = any other axis

# One row of the RNEA workspace ``ws`` (per body): transform to the parent R(9) p(3), velocity
# v, acceleration a, body force f and external wrench f_ext (6 each).  Row nbodies holds
# a_0 = a_base - a_g (root frame) in columns 0-5.
W_R, W_P, W_V, W_A, W_F, W_X, W_N = 0, 9, 12, 18, 24, 30, 36
# One row of the ABA workspace ``wa`` (per body): articulated inertia IA (6x6, row major), bias
# force pA, velocity-product acceleration c, U = IA S (6 x nv of the joint, column major),
# D^-1 (nv x nv), u = tau - S^T pA.  Two more rows hold scratch matrices.
B_IA, B_PA, B_C, B_U, B_DINV, B_u, B_N = 0, 36, 42, 48, 84, 120, 132
# One row of the kinematics workspace ``wk`` (per body): the joint transform to the parent
# (R 9, p 3, as W_R, W_P), the body's placement in the root frame K_R0 (R 9, p 3), its velocity
# K_V (root frame), the composite inertia in the root frame (K_M mass, K_H first moment, K_I
# rotational inertia about the root origin), the composite Coriolis factor B = [[0, -[K_BL]],
# [0, K_BA]] (the linear momentum K_BL and the 3x3 block K_BA) and the last body of its subtree
# K_LAST.  Then one row per velocity coordinate (nbodies + 6 rows):
# the joint's motion D_S (root frame), its rate D_DS = v x S and the force D_F.
K_R0, K_V, K_M, K_H, K_I, K_BL, K_BA, K_LAST, K_N = 12, 24, 30, 31, 34, 43, 46, 55, 56
D_S, D_DS, D_F, D_N = 0, 6, 12, 18

# Status codes of the kernels (0 = success); the Python wrappers turn them into ValueErrors.
STATUS_OK = 0
STATUS_BAD_Q = 1             # q, qd, qdd (or tau): a non-finite entry
STATUS_BAD_QD = 2
STATUS_BAD_QDD = 3
STATUS_BAD_QUATERNION = 4    # floating-base quaternion of zero (or overflowing) norm
STATUS_LEN_Q = 5             # q, qd, qdd (or tau): wrong length
STATUS_LEN_QD = 6
STATUS_LEN_QDD = 7
STATUS_OVERFLOW = 8          # finite inputs, non-finite result (magnitudes too large)
STATUS_STRIDED = 9           # a state vector is not contiguous (direct kernel calls only)
STATUS_SINGULAR = 100        # + body index: d_i is not positive (massless subtree, no armature)


def workspace_size(nb):
    """Return the length of a workspace buffer: RNEA, ABA, then kinematics rows (see above).

    RNEA rows (nb+1) x W_N, ABA rows (nb+2) x B_N, kinematics rows nb x K_N and (nb+6) x D_N.
    """
    return (nb + 1) * W_N + (nb + 2) * B_N + nb * K_N + (nb + 6) * D_N
