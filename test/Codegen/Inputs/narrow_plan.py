"""Checks the plan (JSON) of a program compiled with --weight-dtype against
the weight-storage contract in runtime/core/Plan.h, independently of codegen:

- exactly the linear weights (a gated linear's gate and up included) and
  embedding tables are narrow (dtype, and group for int8); positions,
  norms and biases stay f32;
- each narrow weight argument has its storage type, and an int8 one is
  one byte buffer of rows of blocks (an f16 scale, then `group` values),
  viewed ((2 + group) * ceil(K / group), N), whose offset is a whole number
  of such rows (a split's first row).

Prints one summary line per entry point for FileCheck; exits 1 with the
reason on the first violation."""
import json
import sys

TYPES = {"bf16": "bf16", "int8": "i8"}


def fail(message):
    print("narrow_plan.py: " + message)
    sys.exit(1)


def check_weight_arg(args, position, values, weights, dtype):
    """The narrow weight at args[position]; for int8, its view of blocks."""
    arg = args[position]
    value = values[arg["value"]]
    weight = weights[value["index"]]
    if weight.get("dtype") != dtype:
        fail(f"{weight['name']} is {weight.get('dtype', 'f32')}")
    if arg["type"] != TYPES[dtype]:
        fail(f"{weight['name']} is passed as {arg['type']}")
    if dtype != "int8":
        return
    group = weight["group"]
    rows, columns = weight["shape"]
    row_bytes = -(-columns // group) * (2 + group)
    view_rows = arg["dims"][1][0]
    if arg["dims"] != [[row_bytes], [view_rows]]:
        fail(f"{weight['name']}: dims {arg['dims']}, expected [[{row_bytes}], [rows]]")
    offset = value.get("offset", 0)
    if offset % row_bytes != 0 or offset // row_bytes + view_rows > rows:
        fail(f"{weight['name']}: offset {offset} is not a row of blocks within its {rows} rows")


def main(path, dtype):
    plans = json.load(open(path))
    plans = plans if isinstance(plans, list) else [plans]
    for plan in plans:
        weights, values = plan["weights"], plan["values"]
        narrow_args = 0
        for step in plan["steps"]:
            args = step["args"]
            # Weight arguments: linear's (x, w), embedding's (ids, table),
            # gated_linear's (x, gate, up).
            weight_args = {"tfm.linear": 1, "tfm.embedding": 1,
                           "tfm.gated_linear": 2}.get(step.get("op"), 0)
            if weight_args == 0:
                for arg in args:
                    value = values[arg["value"]]
                    if value["kind"] == "weight" and "dtype" in weights[value["index"]]:
                        fail(f"{step.get('op', 'a store step')} reads narrow weight {weights[value['index']]['name']}")
                continue
            position = 1
            for _ in range(weight_args):
                check_weight_arg(args, position, values, weights, dtype)
                narrow_args += 1
                position += 1
        narrow = sorted(w["name"] for w in weights if "dtype" in w)
        f32 = sorted(w["name"] for w in weights if "dtype" not in w)
        print(f"{plan['entry']}: {narrow_args} narrow weight args; narrow: {' '.join(narrow)}; f32: {' '.join(f32)}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
