"""How the watch writes its files into TRAINREPRO_WATCH_DIR: each atomically (a .partial file,
then renamed), safetensors written here (the user's environment need not have the package),
JSON with NaN and Inf as strings."""
import json
import math
import os
import struct


def _write_atomically(path, data):
    with open(path + ".partial", "wb") as out:
        out.write(data)
    os.replace(path + ".partial", path)


def _write_safetensors_atomically(path, tensors):
    """The safetensors format (an 8-byte little-endian header size, the JSON header, the data),
    written tensor by tensor: never the whole file in memory at once."""
    header, offset = {}, 0
    for name, tensor in tensors.items():
        size = tensor.numel() * 8
        header[name] = {"dtype": "F64", "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path + ".partial", "wb") as out:
        out.write(struct.pack("<Q", len(text)) + text)
        for tensor in tensors.values():
            out.write(tensor.detach().to("cpu").contiguous().double().numpy().tobytes())
    os.replace(path + ".partial", path)


def _json_safe(value):
    """The config as JSON can hold it: accelerate writes "steps_per_print": float("inf"), and
    JSON has no infinity (written as the string "inf"); other objects by their repr."""
    import math
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)
