"""Writing results: whole files or nothing (a temporary file renamed over the target)."""

import os
import tempfile

from rnea_ros.core.sensor import SENSOR_OPTIONS


def write_atomic(path, text):
    """Write ``text`` to ``path`` through a temporary file in the same folder and os.replace.

    A reader never sees a half-written file, and a failure leaves no output behind.
    """
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix='.' + os.path.basename(path) + '.', dir=folder)
    try:
        with os.fdopen(fd, 'w', encoding='utf-8') as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _fmt(x):
    return f'{float(x):.9g}'


def identified_urdf(xml, model, phi, joint_params):
    """Return the URDF text with identified inertials and joint friction written in.

    Body b's parameters (frame of its moving joint's child link, :mod:`rnea_ros.core.regressor`)
    go to that link's ``<inertial>`` (mass, centre of mass, inertia about it, rpy zero); links
    merged into the body over fixed joints lose their ``<inertial>`` (the body carries the lumped
    inertia); links fixed to the world keep theirs.  Every moving joint gets
    ``<dynamics damping="Fv" friction="Fs"/>``.  Everything else is kept as written.
    """
    import xml.etree.ElementTree as ET
    import numpy as np
    root = ET.fromstring(xml)
    links = {e.get('name'): e for e in root.findall('link')}
    for lk, (body, _, _) in model.link_body.items():
        if body < 0 or lk not in links:
            continue
        element = links[lk]
        for old in element.findall('inertial'):
            element.remove(old)
        if lk != model.body_links[body]:
            continue
        p = np.asarray(phi[10 * body:10 * body + 10], dtype=float)
        m = p[0]
        c = p[1:4] / m
        xx, xy, xz, yy, yz, zz = p[4:10]
        inertia_o = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        inertia_c = inertia_o - m * (np.dot(c, c) * np.eye(3) - np.outer(c, c))
        inertial = ET.SubElement(element, 'inertial')
        ET.SubElement(inertial, 'origin', xyz=' '.join(_fmt(v) for v in c), rpy='0 0 0')
        ET.SubElement(inertial, 'mass', value=_fmt(m))
        ET.SubElement(inertial, 'inertia', ixx=_fmt(inertia_c[0, 0]), ixy=_fmt(inertia_c[0, 1]),
                      ixz=_fmt(inertia_c[0, 2]), iyy=_fmt(inertia_c[1, 1]),
                      iyz=_fmt(inertia_c[1, 2]), izz=_fmt(inertia_c[2, 2]))
        element.remove(inertial)
        element.insert(0, inertial)
    joints = {e.get('name'): e for e in root.findall('joint')}
    for j, name in enumerate(model.joint_names):
        element = joints[name]
        for old in element.findall('dynamics'):
            element.remove(old)
        ET.SubElement(element, 'dynamics', damping=_fmt(joint_params[j][0]),
                      friction=_fmt(joint_params[j][1]))
    ET.indent(root)
    return '<?xml version="1.0"?>\n' + ET.tostring(root, encoding='unicode') + '\n'


def _rcl_float(value):
    """Return ``value`` as a float that rcl's parameter-file parser reads (no subnormals)."""
    value = float(value)
    return 0.0 if value != 0.0 and abs(value) < 2.2250738585072014e-308 else value


def node_parameters(model, result):
    """Return the node parameter YAML text: friction, offsets, armature (and crosstalk).

    ``result`` is an :class:`~rnea_ros.analysis.identification.Identification` (every term of
    its friction law) or a (njoints, 4) array [Fv, Fs, Ia, off].  The parameters sit under
    ``/**`` (any node name, any namespace, as the shipped config files), so that a node started
    with ``namespace:=left`` gets them too.
    """
    import numpy as np
    import yaml
    names = list(model.joint_names)
    if hasattr(result, 'model_options'):
        options = result.model_options(model)
    else:
        jp = np.asarray(result, dtype=float).reshape(len(names), 4)
        options = {'friction_viscous': dict(zip(names, jp[:, 0])),
                   'friction_coulomb': dict(zip(names, jp[:, 1])),
                   'armature': dict(zip(names, jp[:, 2])),
                   'effort_offset': dict(zip(names, jp[:, 3])),
                   'friction_law': 'linear', 'coulomb_band': model.coulomb_band,
                   'stribeck_velocity': model.stribeck_velocity}
    params = {'friction_joints': names}
    for key in ('friction_viscous', 'friction_coulomb', 'armature', 'friction_viscous_negative',
                'friction_coulomb_negative', 'friction_stribeck', 'effort_offset'):
        if key in options:
            params[key] = [_rcl_float(options[key][n]) for n in names]
    params['friction_law'] = str(options['friction_law'])
    params['coulomb_band'] = float(options['coulomb_band'])
    params['stribeck_velocity'] = float(options['stribeck_velocity'])
    for key in ('friction_coulomb_band', 'friction_stribeck_velocity'):   # per joint, if any
        if key in options:
            params[key] = [float(options[key][n]) for n in names]
    for key in SENSOR_OPTIONS:                         # sensor crosstalk, when identified
        if key in options:
            params[key] = [_rcl_float(options[key][n]) for n in names]
    return yaml.safe_dump({'/**': {'ros__parameters': params}}, sort_keys=False)
