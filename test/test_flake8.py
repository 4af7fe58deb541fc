"""ament_flake8 (ROS 2 linter set-up: 99 columns, single quotes, import order) on the package.

ament_flake8 lints on a pool of forked processes: it runs in a fresh interpreter, because a
fork of this test process (with the threads that earlier tests started, numba's and ROS's)
can deadlock in the child.
"""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINTED = ('rnea_ros', 'test', 'launch', 'benchmarks', 'setup.py')
RUN = 'import sys; from ament_flake8.main import main; sys.exit(main(argv=sys.argv[1:]))'


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8():
    paths = [p for p in LINTED if os.path.exists(p)]
    done = subprocess.run([sys.executable, '-c', RUN] + paths, cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    checked = done.stdout.split('Checked files:')[-1]
    for folder in paths:
        if os.path.isdir(folder) and any(f.endswith('.py') for f in os.listdir(folder)):
            assert f'* {folder}/' in checked, f'ament_flake8 did not lint {folder}/'
    assert done.returncode == 0, 'code style errors / warnings:\n' + done.stdout[-6000:] + \
        done.stderr[-2000:]
