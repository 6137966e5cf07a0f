# tfmc: the two README commands.
#   make demo   install what is missing, build, and show tfmc at work
#   make check  install what is missing, build, run every unit and lit test
# Both are idempotent: packages are installed only when missing, and the
# build is incremental (Ninja + ccache).

BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
# Debian's python3 (torch, numpy); another python3 may come first on PATH.
PYTHON ?= /usr/bin/python3

# Debian 12 packages the project needs to build and test.
PACKAGES := cmake ninja-build ccache g++ python3 \
	llvm-19-dev libmlir-19-dev mlir-19-tools llvm-19-tools \
	libhalide14-0-dev libfmt-dev nlohmann-json3-dev \
	libgtest-dev libbenchmark-dev \
	python3-torch python3-numpy libopenblas-dev

.PHONY: all deps configure build check demo clean

all: build

# apt-get update runs once, and only when something is missing.
deps:
	@missing=$$(for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends $$missing; \
	fi

$(BUILD_DIR)/build.ninja: | deps
	cmake -G Ninja -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

configure: $(BUILD_DIR)/build.ninja

build: deps configure
	ninja -C $(BUILD_DIR) -j $(JOBS)

check: build
	@$(PYTHON) test/run_tests.py --build-dir $(BUILD_DIR)

demo: build
	@echo "== tfmc --emit mlir examples/transformer_base.tfm"
	@$(BUILD_DIR)/tools/tfmc/tfmc examples/transformer_base.tfm --emit mlir

clean:
	rm -rf $(BUILD_DIR)
