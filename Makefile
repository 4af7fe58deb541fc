# rnea_ros: `make demo` sets up and runs the main job, `make test` the whole test suite.
# Both create a local virtual environment (.venv) with pinned versions from PyPI if missing.
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
export AMENT_PREFIX_PATH := $(abspath $(VENV))$(if $(AMENT_PREFIX_PATH),:$(AMENT_PREFIX_PATH))

.PHONY: venv test lint demo bench clean

$(STAMP): requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.txt
	rm -f $(VENV)/.installed-* $(ROS2_CLI_STAMP)
	touch $(STAMP)

$(ROS2_CLI_STAMP): $(STAMP)
	if [ -f $(ROS2_CLI)/install.sh ]; then \
	  bash $(ROS2_CLI)/install.sh $(BIN)/python && touch $(ROS2_CLI_STAMP); \
	else echo "no $(ROS2_CLI): launch tests use a ROS 2 install's launch, or skip"; fi

venv: $(STAMP) $(ROS2_CLI_STAMP)

lint: venv
	$(BIN)/python -m pytest -q test/test_flake8.py test/test_pep257.py

test: venv
	$(BIN)/python -m pytest -q -rs test

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
	rm -rf $(VENV) build install log out .pytest_cache
