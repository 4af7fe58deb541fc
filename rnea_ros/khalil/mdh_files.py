"""MDH tables from YAML or CSV files (format: :mod:`rnea_ros.khalil.mdh`), and shipped examples.

YAML: a ``frames:`` list of rows (plus ``NL``, ``NJ``, ``name``, ``base``); CSV: a header row
and ``# NL = ..``, ``# NJ = ..`` directives.  Numbers may be written ``-pi/2``.
"""

import csv
import io
import os

from rnea_ros.khalil.mdh import make_table


# -- file formats ---------------------------------------------------------------------------

def load_mdh_yaml(text_or_path):
    """Return the :class:`MDHTable` of a YAML document (text or path).

    Format::

        name: rx90          # optional
        base: base_link     # optional name of link 0
        NL: 6               # optional (default: number of frames, a tree)
        NJ: 6               # optional (default: NL)
        frames:
          - {j: 1, a: 0, mu: 1, sigma: 0, alpha: 0, d: 0, theta: 0, r: 0, ZZ: 1.2, Ia: 0.5}
          - {j: 2, a: 1, mu: 1, sigma: 0, alpha: -pi/2, ...}
    """
    import yaml
    text = _read(text_or_path, ('.yaml', '.yml'))
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ValueError(f'invalid MDH YAML: {e}') from None
    if not isinstance(doc, dict) or not isinstance(doc.get('frames'), list):
        raise ValueError("invalid MDH YAML: expected a mapping with a list 'frames'")
    for idx, row in enumerate(doc['frames'], start=1):
        if not isinstance(row, dict):
            raise ValueError(f'invalid MDH YAML: frame {idx} is not a mapping')
    unknown = sorted(set(doc) - {'frames', 'name', 'base', 'NL', 'NJ'})
    if unknown:
        raise ValueError(f'invalid MDH YAML: unknown key(s) {unknown}')
    return make_table(doc['frames'], NL=doc.get('NL'), NJ=doc.get('NJ'),
                      name=str(doc.get('name', 'robot')), base=str(doc.get('base', 'base_link')))


def load_mdh_csv(text_or_path):
    """Return the :class:`MDHTable` of a CSV table (text or path).

    The first non-comment line names the columns (any of :data:`COLUMNS`, ``lower``, ``upper``,
    ``effort``, ``velocity``, ``name``, ``link``); one row per frame.  Lines starting with '#'
    are comments, except directives ``# NL = 7``, ``# NJ = 9``, ``# name = x``, ``# base = y``.
    """
    text = _read(text_or_path, ('.csv',))
    meta, lines = {}, []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith('#'):
            key, sep, value = stripped.lstrip('#').partition('=')
            if sep and key.strip() in ('NL', 'NJ', 'name', 'base'):
                meta[key.strip()] = value.strip()
            continue
        lines.append(line)
    if not lines:
        raise ValueError('invalid MDH CSV: no header line')
    reader = csv.DictReader(io.StringIO('\n'.join(lines)), skipinitialspace=True)
    reader.fieldnames = [h.strip() for h in reader.fieldnames]
    rows = []
    for idx, row in enumerate(reader, start=1):
        if None in row or any(v is None for v in row.values()):
            raise ValueError(f'invalid MDH CSV: row {idx} has a different number of columns '
                             'than the header')
        rows.append(row)
    return make_table(rows, NL=meta.get('NL'), NJ=meta.get('NJ'),
                      name=meta.get('name', 'robot'), base=meta.get('base', 'base_link'))


def load_mdh(path):
    """Return the table of a ``.yaml``/``.yml`` or ``.csv`` file."""
    if str(path).lower().endswith('.csv'):
        return load_mdh_csv(path)
    return load_mdh_yaml(path)


def _read(text_or_path, suffixes):
    s = str(text_or_path)
    if '\n' not in s and s.lower().endswith(suffixes):
        try:
            with open(s, encoding='utf-8') as f:
                return f.read()
        except OSError as e:
            raise ValueError(f'cannot read MDH table {s!r}: {e.strerror}') from None
    return s


def data_path(filename):
    """Return the path of an example table shipped in ``rnea_ros/khalil/data``."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', filename)
