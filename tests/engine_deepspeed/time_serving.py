"""Wall time of N jobs trained one-shot (a fresh coordinator and ranks each, as trainrepro does
today) against the same N jobs served by one set (serving.py), on DeepSpeed 0.19.8, CPU.

Usage: time_serving.py JOB_NAME...   (names of serving_jobs/*.json, all of one world size)
Prints a table; exit 77 without DeepSpeed 0.19.8, 1 when a job is not trained in either mode.
"""
import json
import os
import sys
import tempfile
import time

import serving_client as client


def main():
    names = sys.argv[1:]
    python = client.deepspeed_python()
    if python is None:
        return client.SKIP
    jobs = [client.load_job(name) for name in names]
    world_size = jobs[0]["world_size"]
    failed = 0
    with tempfile.TemporaryDirectory(prefix="trainrepro-serving-time-") as folder:
        one_shot = []
        for i, job in enumerate(jobs):
            started = time.time()
            completed, prefix = client.run_one_shot(python, job, f"{folder}/one-shot-{i}")
            one_shot.append(time.time() - started)
            failed += json.load(open(prefix + ".json"))["status"] != "trained"
        served_set = client.ServingSet(python, world_size, f"{folder}/served")
        served, started = [], time.time()
        for job in jobs:
            n, prefix = served_set.submit(job)
            answer = served_set.answer(n, timeout=600)
            served.append(time.time() - started)
            started = time.time()
            failed += answer.get("status") != "answered" or \
                json.load(open(prefix + ".json"))["status"] != "trained"
        served_set.stop()
    print(f"{'job':40} {'one-shot s':>10} {'served s':>9}")
    for name, a, b in zip(names, one_shot, served):
        print(f"{name:40} {a:10.2f} {b:9.2f}")
    total_a, total_b = sum(one_shot), sum(served)
    print(f"{'total (' + str(len(names)) + f' jobs, {world_size} rank(s))':40} {total_a:10.2f} "
          f"{total_b:9.2f}   ratio {total_a / total_b:.2f}x")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
