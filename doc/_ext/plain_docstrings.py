"""Sphinx extension: read the package's plain-text docstrings as reStructuredText safely.

The docstrings are written for people reading the source (pep257), not for rST: ``|x|`` is an
absolute value (rST reads a substitution), a continuation line may be indented more than the
line before it (rST reads a block quote without the blank line it needs), and ``:mod:`.name```
is relative to the module's package.  Before autodoc parses a docstring this extension escapes
the bars outside inline literals, puts a blank line where the indentation changes, and makes
relative cross-references absolute; the text itself is unchanged.
"""

import re

_ROLE_RELATIVE = re.compile(r'(:(?:mod|func|class|meth|attr|data|exc):`~?)\.(?=\w)')
_LITERAL = re.compile(r'(``.+?``)')


def _escape_bars(line):
    """Return ``line`` with every ``|`` outside ````literals```` escaped."""
    parts = _LITERAL.split(line)
    return ''.join(part if index % 2 else part.replace('|', '\\|')
                   for index, part in enumerate(parts))


def _indent(line):
    return len(line) - len(line.lstrip())


def plain_lines(lines, package):
    """Return the docstring ``lines`` made safe for rST (see the module docstring)."""
    out, previous, literal_indent = [], None, None
    for line in lines:
        if not line.strip():
            out.append(line)
            previous = None if literal_indent is None else previous
            continue
        indent = _indent(line)
        if literal_indent is not None:
            if indent > literal_indent:
                out.append(line)
                continue
            literal_indent = None
            if out and out[-1].strip():
                out.append('')
            previous = None
        line = _ROLE_RELATIVE.sub(lambda m: m.group(1) + package + '.', line)
        line = _escape_bars(line)
        if previous is not None and indent != _indent(previous):
            out.append('')
        out.append(line)
        previous = line
        if line.rstrip().endswith('::'):
            literal_indent = indent
            out.append('')
            previous = None
    return out


def _process(app, what, name, obj, options, lines):
    module = name if what == 'module' else getattr(obj, '__module__', None) or name
    package = module.rsplit('.', 1)[0]
    lines[:] = plain_lines(lines, package)


def setup(app):
    """Register the docstring hook."""
    app.connect('autodoc-process-docstring', _process)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}
