"""Node parameters of :mod:`rnea_ros.node.monitor` and the payload they describe (no ROS).

:mod:`rnea_ros.node.params` adds these entries to the node's parameter table.
"""

from rnea_ros.core.payload import add_payload, Payload
from rnea_ros.core.urdf import parse_urdf, read_urdf

PAYLOAD_DEFAULTS = {'payload_link': '', 'payload_mass': 0.0, 'payload_com': [0.0, 0.0, 0.0],
                    'payload_inertia': [0.0] * 6}


def _spec(name, kind, default, description, **extra):
    """Return the keyword arguments of one node_params.ParamSpec."""
    return dict(name=name, kind=kind, default=default, description=description, **extra)


# Parameter table entries (node_params.ParamSpec keyword arguments), added to the node's table.
PARAMETERS = (
    _spec('contact_thresholds', 'double_array', [],
          'Effort residual threshold per joint in N m or N (one value for all '
          'joints or one per model joint); |measured - model effort| above it publishes true '
          'on ~/contact. [] (not set): no ~/contact.', low=0.0, high=1e9),
    _spec('payload_link', 'string', '',
          'Link that carries a payload (rigid body on a fixed joint at the link '
          "origin). '' = no payload. Changing a payload_* parameter rebuilds the model."),
    _spec('payload_mass', 'double', 0.0,
          'Payload mass in kg.', low=0.0, high=1e5),
    _spec('payload_com', 'double_array', [0.0, 0.0, 0.0],
          'Payload centre of mass [x, y, z] in m, in the payload_link frame.',
          low=-100.0, high=100.0, constraints='exactly 3 values'),
    _spec('payload_inertia', 'double_array', [0.0] * 6,
          'Payload inertia about its centre of mass, payload_link axes, in kg m^2: '
          '[ixx, iyy, izz, ixy, ixz, iyz].', low=-1e5, high=1e5,
          constraints='exactly 6 values, positive semi-definite'),
)
MODEL_PARAMETERS = tuple(PAYLOAD_DEFAULTS)
PER_JOINT_PARAMETERS = ('contact_thresholds',)


MAX_LINK_NAME = 256      # characters of a link name parameter


def check_link_name(name, parameter):
    """Raise ValueError unless ``name`` can be a URDF link name: printable, no spaces, short."""
    if len(name) > MAX_LINK_NAME or not name.isprintable() or any(c.isspace() for c in name):
        shown = name[:40] + ('...' if len(name) > 40 else '')
        raise ValueError(f'{parameter} {shown!r} cannot be a link name (printable, no spaces, '
                         f'at most {MAX_LINK_NAME} characters)')


def payload_from_config(cfg):
    """Return the Payload the parameters describe, or None (ValueError when inconsistent)."""
    link = cfg.get('payload_link') or ''
    if link:
        check_link_name(link, 'payload_link')
    mass = cfg.get('payload_mass') or 0.0
    com = list(cfg.get('payload_com') or [0.0, 0.0, 0.0])
    inertia = list(cfg.get('payload_inertia') or [0.0] * 6)
    if len(com) != 3:
        raise ValueError(f'payload_com must have 3 values [x, y, z], got {len(com)}')
    if len(inertia) != 6:
        raise ValueError('payload_inertia must have 6 values [ixx, iyy, izz, ixy, ixz, iyz], '
                         f'got {len(inertia)}')
    if not link:
        if mass > 0.0 or any(inertia):
            raise ValueError('payload_mass/payload_inertia are set but payload_link is empty')
        return None
    if mass == 0.0 and not any(inertia):
        return None
    return Payload(link, mass, com, inertia)


def attach_payload(model, cfg, source, is_file):
    """Return ``model`` rebuilt with the configured payload (the same model when none).

    ``source`` is the URDF text (or file path when ``is_file``) the model was built from, or
    its parsed (name, links, joints) from :func:`rnea_ros.core.urdf.parse_urdf`; the rebuilt
    model keeps the model's joint order, base, friction, armature and Coulomb band.
    """
    payload = payload_from_config(cfg)
    if payload is None:
        return model
    from rnea_ros.core.model import RobotModel
    if isinstance(source, tuple):
        name, links, joints = source
    else:
        name, links, joints = parse_urdf(read_urdf(source) if is_file else source)
    links, joints = add_payload(links, joints, payload)
    names = model.joint_names
    return RobotModel.from_specs(
        links, joints, floating_base=model.floating_base, joint_names=names, name=name,
        **model.joint_term_options())
