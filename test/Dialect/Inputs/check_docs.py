"""Checks the generated references (docs/CMakeLists.txt) against their
sources: TfmDialect.md has a section for every op that TfmOps.td defines and
for every op interface of TfmInterfaces.td, and TfmPasses.md one for every
pass that tfm-opt registers (its --help) and Passes.td defines; each section
has its summary. Prints one line per file checked; exits 1 with the first
difference."""
import re
import subprocess
import sys

src, docs = sys.argv[1], sys.argv[2]


def fail(message):
    print(f"error: {message}")
    sys.exit(1)


def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        fail(f"{path}: {e.strerror} (the build writes it: ninja tfmc-docs)")


def sections(text, pattern):
    return re.findall(pattern, text, re.M)


ops_td = read(f"{src}/dialects/tfm/TfmOps.td")
# def Tfm_XOp : Tfm_Op<"mnemonic", ...> { let summary = "..."; ...
op_defs = re.findall(r'^def Tfm_\w+ : Tfm_Op<"(\w+)".*?let summary = "(.*?)";', ops_td, re.M | re.S)
if not op_defs:
    fail("no op found in TfmOps.td")
dialect = read(f"{docs}/TfmDialect.md")
documented = sections(dialect, r"^### `tfm\.(\w+)`")
if sorted(documented) != sorted(name for name, _ in op_defs):
    fail(f"TfmDialect.md documents ops {sorted(documented)}, TfmOps.td defines {sorted(n for n, _ in op_defs)}")
for name, summary in op_defs:
    section = dialect.split(f"### `tfm.{name}`", 1)[1].split("\n### ", 1)[0]
    # The generator capitalises a summary's first letter.
    if f"_{summary[:1].upper()}{summary[1:]}_" not in section:
        fail(f"TfmDialect.md's tfm.{name} lacks its summary '{summary}'")
interfaces = re.findall(r'^def Tfm_\w+ : OpInterface<"(\w+)">', read(f"{src}/dialects/tfm/TfmInterfaces.td"), re.M)
for interface in interfaces:
    if not re.search(rf"^## {interface} ", dialect, re.M):
        fail(f"TfmDialect.md does not document {interface}")
print(f"TfmDialect.md: {len(op_defs)} ops, {len(interfaces)} interfaces")

passes_td = read(f"{src}/passes/Passes.td")
pass_defs = re.findall(r'^def \w+ : Pass<"([\w-]+)"', passes_td, re.M)
help_text = subprocess.run(["tfm-opt", "--help"], capture_output=True, text=True, check=True).stdout
registered = sorted(set(re.findall(r"--(tfm-[\w-]+)\s", help_text)) - {"tfm-default-pipeline"})
if registered != sorted(pass_defs):
    fail(f"tfm-opt registers passes {registered}, Passes.td defines {sorted(pass_defs)}")
passes = read(f"{docs}/TfmPasses.md")
documented = sections(passes, r"^### `-([\w-]+)`")
if sorted(documented) != sorted(pass_defs):
    fail(f"TfmPasses.md documents passes {sorted(documented)}, Passes.td defines {sorted(pass_defs)}")
print(f"TfmPasses.md: {len(pass_defs)} passes")
