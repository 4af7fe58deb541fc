"""ament_pep257 (docstring conventions) on the package.

The ament convention, except D213: like setup.cfg's pep257 convention, a multi-line docstring's
summary starts on the first line.
"""

import os

from ament_pep257.main import main
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINTED = ('rnea_ros', 'test', 'launch', 'benchmarks', 'setup.py')


@pytest.mark.linter
@pytest.mark.pep257
def test_pep257(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    paths = [p for p in LINTED if os.path.exists(p)]
    rc = main(argv=paths + ['--add-ignore', 'D213'])
    out, err = capsys.readouterr()
    for folder in paths:
        if os.path.isdir(folder) and any(f.endswith('.py') for f in os.listdir(folder)):
            assert f'checking {folder}/' in out, f'ament_pep257 did not check {folder}/'
    assert rc == 0, 'Found code style errors / warnings:\n' + err
