"""Sphinx configuration of the rnea_ros manual (the ``doc/`` folder rosdoc2 builds).

Pages are MyST Markdown (``.md``).  Every build first writes the reference pages from the code
(``doc/generate.py``): node parameters, topics, command line, launch arguments and the API.
Build with ``make doc`` (HTML into ``doc/_build/html``, warnings as errors).
"""

import os
import sys


def _doc_folder():
    """Return this folder: rosdoc2 execs this file from its own conf.py, elsewhere.

    Then ``__file__`` is rosdoc2's file; the folder is the source folder sphinx-build was
    given (an argument), or ``doc`` under the working directory.
    """
    candidates = [os.path.dirname(os.path.abspath(globals().get('__file__', '.')))]
    candidates += [os.path.abspath(arg) for arg in sys.argv[1:] if not arg.startswith('-')]
    candidates += [os.getcwd(), os.path.join(os.getcwd(), 'doc')]
    for folder in candidates:
        if os.path.isfile(os.path.join(folder, 'generate.py')) and \
                os.path.isfile(os.path.join(folder, 'topics.yaml')):
            return folder
    raise RuntimeError('doc/conf.py: cannot find the doc folder (with generate.py)')


HERE = _doc_folder()
sys.path.insert(0, os.path.dirname(HERE))       # the package: autodoc and the generator
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '_ext'))

import generate  # noqa: E402  (needs the paths above)

generate.write_pages()

project = 'rnea_ros'
author = 'the rnea_ros authors'
copyright = '2026, the rnea_ros authors'  # noqa: A001  (the name Sphinx reads)

extensions = ['myst_parser', 'sphinx.ext.autodoc', 'plain_docstrings']
source_suffix = {'.md': 'markdown'}
root_doc = 'index'
exclude_patterns = ['_build', 'README.md']
myst_heading_anchors = 3
myst_enable_extensions = ['colon_fence', 'deflist']

autodoc_default_options = {'members': True}
autodoc_member_order = 'bysource'
autodoc_mock_imports = ['control_msgs']

html_theme = 'alabaster'
html_static_path = ['_static']       # custom.css: wide pages for the reference tables
