"""Print the URDF of an MDH table: ``python -m rnea_ros.khalil table.yaml|table.csv``."""

from rnea_ros.khalil.mdh_model import main

raise SystemExit(main())
