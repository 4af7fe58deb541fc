"""The demo: a simulated "real" robot, its nominal URDF, the model identified from data, scenes.

``python -m rnea_ros.demo`` (``make demo``) runs it (:mod:`rnea_ros.demo.runner`). The demo sits
above the simulator (:mod:`rnea_ros.sim`), the node and the analysis tools; nothing imports it.

- :mod:`~rnea_ros.demo.runner`: processes, phases, the story from start to summary;
- :mod:`~rnea_ros.demo.story`: the real robot, bags, ``rnea-ros excite`` and ``identify``;
- :mod:`~rnea_ros.demo.perturbation`: the real robot as a seeded perturbation of the URDF;
- :mod:`~rnea_ros.demo.scenes`: the push and grasp scenes after identification;
- :mod:`~rnea_ros.demo.analysis`, :mod:`~rnea_ros.demo.report`: figures, table, plots.
"""
