"""Reading and writing safetensors files in plain Python (json + struct):
the bad-input and import tests rewrite the fixtures with these."""
import json
import struct


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    body = data[8 + n:]
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        tensors[name] = [info["dtype"], info["shape"], body[begin:end]]
    return tensors


def write(path, tensors, raw_header=None, pad=False):
    """pad: the header padded with spaces to a multiple of 8 bytes, as the
    reference implementation writes it (every tensor then naturally aligned
    when mapped); without, the tests get misaligned tensors too."""
    header, body = {}, b""
    for name in sorted(tensors):
        dtype, shape, data = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(body), len(body) + len(data)]}
        body += data
    text = raw_header if raw_header is not None else json.dumps(header).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + body)
