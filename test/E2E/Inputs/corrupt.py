#!/usr/bin/env python3
"""Writes a malformed copy of a safetensors file, for the bad-input tests.

  corrupt.py KIND SOURCE OUT [NAME]

KIND is one of: truncate, not-json, offsets-past-end, overlap, drop (NAME),
reshape (NAME), dtype (NAME), rename (NAME), to-f32 (NAME), rank3 (NAME),
set-id (NAME: sets element [0, 0] to the 4th argument), too-long (NAME, all
tensors: one more column than the limit given as 4th argument), batch0,
to-text (ids and mask as text, for the C API test).
Plain Python: no numpy or torch needed.
"""
import json
import struct
import sys

from safetensors_io import read, write


def main():
    kind, source, out = sys.argv[1:4]
    name = sys.argv[4] if len(sys.argv) > 4 else None
    tensors = read(source)
    if kind == "truncate":
        data = open(source, "rb").read()
        open(out, "wb").write(data[: len(data) // 2])
    elif kind == "not-json":
        write(out, tensors, raw_header=b'{"a": [1, 2,')
    elif kind == "offsets-past-end":
        header = {n: {"dtype": d, "shape": s, "data_offsets": [0, len(b)]}
                  for n, (d, s, b) in tensors.items()}
        # The right size, but starting past the 64 bytes of data there are.
        first = sorted(header)[0]
        size = len(tensors[first][2])
        header[first]["data_offsets"] = [32, 32 + size]
        text = json.dumps(header).encode()
        with open(out, "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + b"\0" * 64)
    elif kind == "overlap":
        names = sorted(tensors)[:2]
        header, body = {}, b""
        for n in sorted(tensors):
            d, s, b = tensors[n]
            header[n] = {"dtype": d, "shape": s,
                         "data_offsets": [len(body), len(body) + len(b)]}
            body += b
        # The second tensor starts inside the first.
        a, b = names
        size = header[b]["data_offsets"][1] - header[b]["data_offsets"][0]
        header[b]["data_offsets"] = [4, 4 + size]
        text = json.dumps(header).encode()
        with open(out, "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + body)
    elif kind == "drop":
        del tensors[name]
        write(out, tensors)
    elif kind == "reshape":
        d, s, b = tensors[name]
        tensors[name] = [d, [s[0] // 2, s[1] * 2] if len(s) == 2 else [1] + s, b]
        write(out, tensors)
    elif kind == "dtype":
        d, s, b = tensors[name]
        tensors[name] = ["I32", s, b]
        write(out, tensors)
    elif kind == "rename":
        tensors["input_idz"] = tensors.pop(name)
        write(out, tensors)
    elif kind == "to-f32":
        d, s, b = tensors[name]
        values = struct.unpack("<%dq" % (len(b) // 8), b)
        tensors[name] = ["F32", s, struct.pack("<%df" % len(values), *values)]
        write(out, tensors)
    elif kind == "rank3":
        d, s, b = tensors[name]
        tensors[name] = [d, [1] + s, b]
        write(out, tensors)
    elif kind == "set-id":
        d, s, b = tensors[name]
        value = int(sys.argv[5])
        tensors[name] = [d, s, struct.pack("<q", value) + b[8:]]
        write(out, tensors)
    elif kind == "too-long":
        limit = int(sys.argv[4])
        for n, (d, s, b) in tensors.items():
            rows = s[0]
            tensors[n] = [d, [rows, limit + 1], struct.pack("<q", 1) * rows * (limit + 1)]
        write(out, tensors)
    elif kind == "to-text":
        # "B S", then input_ids and attention_mask row by row, for the C
        # test; then "B T" and the decoder's, when the inputs have them.
        with open(out, "w") as f:
            for prefix in ("", "decoder_"):
                if prefix + "input_ids" not in tensors:
                    continue
                ids = tensors[prefix + "input_ids"]
                mask = tensors[prefix + "attention_mask"]
                rows, cols = ids[1]
                count = rows * cols
                f.write("%d %d\n" % (rows, cols))
                for tensor in (ids, mask):
                    values = struct.unpack("<%dq" % count, tensor[2])
                    f.write(" ".join(map(str, values)) + "\n")
    elif kind == "batch0":
        for n, (d, s, b) in tensors.items():
            tensors[n] = [d, [0, s[1]], b""]
        write(out, tensors)
    else:
        sys.exit("unknown kind " + kind)


if __name__ == "__main__":
    main()
