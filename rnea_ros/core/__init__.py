"""The dynamics core: no ROS, no MuJoCo; laid out as Pinocchio (parsers, model, algorithms).

- description: :mod:`.specs` (link and joint records), :mod:`.urdf` (the one URDF reader),
  :mod:`.payload`, :mod:`.payload_estimation` (a payload's parameters by RLS);
- model: :mod:`.layout` (constants and table columns), :mod:`.tree` (building steps),
  :mod:`.model` (RobotModel, Workspace), :mod:`.spatial`, :mod:`.joints`;
- algorithms: :mod:`.dynamics` (RNEA), :mod:`.crba` (mass matrix), :mod:`.aba` (forward
  dynamics), :mod:`.coriolis` (Coriolis matrix), :mod:`.kinematics` (link-frame placement and
  Jacobian), :mod:`.frame_acceleration` (link-frame velocity and spatial or classical
  acceleration), :mod:`.floating_base`, :mod:`.observer` (momentum observer, collisions,
  external wrench); :mod:`.kernels` (numba) and :mod:`.reference` (numpy, the
  book's notation) compute them, :mod:`.checks` checks the inputs.
"""
