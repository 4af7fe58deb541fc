"""ament_flake8 (ROS 2 linter set-up: 99 columns, single quotes, import order) on the package."""

import os

from ament_flake8.main import main_with_errors
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINTED = ('rnea_ros', 'test', 'launch', 'benchmarks', 'setup.py')


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    paths = [p for p in LINTED if os.path.exists(p)]
    rc, errors = main_with_errors(argv=paths)
    checked = capsys.readouterr().out.split('Checked files:')[-1]
    for folder in paths:
        if os.path.isdir(folder) and any(f.endswith('.py') for f in os.listdir(folder)):
            assert f'* {folder}/' in checked, f'ament_flake8 did not lint {folder}/'
    assert rc == 0, f'Found {len(errors)} code style errors / warnings:\n' + '\n'.join(errors)
