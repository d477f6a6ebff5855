#!/usr/bin/env python3
"""A stand-in for a DeepSpeed Python (TRAINREPRO_DEEPSPEED_PYTHON) that misbehaves as
FAKE_DEEPSPEED_MODE says, for check_bad_worker.py: `no-deepspeed` (the probe finds no deepspeed),
`absent` (the worker writes no trace), `truncated` (half a trace JSON), `bad-tensors` (a trained
trace whose safetensors file is cut short), `raises` (the worker's error status with a
traceback), `probe-crashes` (the probe dies by SIGSEGV before answering). The probe logs an INFO line on stdout first, as DeepSpeed 0.17.5 does."""
import json
import os
import signal
import sys

mode = os.environ.get("FAKE_DEEPSPEED_MODE", "")
if sys.argv[1] == "-c":  # trainrepro's probe: -c PROGRAM ENGINE ANSWER_FILE
    if mode == "probe-crashes":  # a crash in native code on import: no answer, no output
        os.kill(os.getpid(), signal.SIGSEGV)
    # What a release may log on import, on stdout: never taken for the answer.
    print("[2026-12-06 06:20:12,343] [INFO] [real_accelerator.py:260:get_accelerator] Setting "
          "ds_accelerator to cpu (override)")
    if mode == "no-deepspeed":
        answer = {"missing": "deepspeed", "error": "ModuleNotFoundError: No module named 'deepspeed'"}
    else:
        answer = {"engine": "deepspeed", "deepspeed": "0.19.8", "torch": "2.11.0", "python": "3.11.7"}
    json.dump(answer, open(sys.argv[4], "w"))
    sys.exit(3 if mode == "no-deepspeed" else 0)
job = json.load(open(sys.argv[2]))
prefix = job["trace"]
header = {"format": "trainrepro-deepspeed-trace", "format_version": 2}
if mode == "absent":
    print("Segmentation fault (pretend)")
    sys.exit(139)
if mode == "truncated":
    text = json.dumps(dict(header, status="trained", parameter_names=job["golden"]["parameters"]))
    open(prefix + ".json", "w").write(text[: len(text) // 2])
    sys.exit(0)
if mode == "bad-tensors":
    open(prefix + ".safetensors", "wb").write(b"\x10\x00\x00\x00\x00\x00\x00\x00{\"a\"")
    steps = [{"micro_step": 1, "through_engine": True, "gradient_norm": 1.0, "lr": 0.1,
              "loss_scale": 1.0, "skipped": False}]
    json.dump(dict(header, status="trained", parameter_names=job["golden"]["parameters"],
                   micro_steps=[{"loss": 1.0, "items": 8}], steps=steps,
                   counters={"micro_steps": 1, "global_steps": 1, "skipped_steps": 0}),
              open(prefix + ".json", "w"))
    sys.exit(0)
if mode == "raises":
    json.dump(dict(header, status="error", reason="RuntimeError: pretend failure",
                   traceback="Traceback (most recent call last):\n  File \"ds_worker.py\"\n"
                             "RuntimeError: pretend failure\n"), open(prefix + ".json", "w"))
    sys.exit(0)
sys.exit(f"unknown FAKE_DEEPSPEED_MODE {mode!r}")
