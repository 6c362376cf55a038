"""examples/ddp_synthetic.py end to end: under tuttirun -n 2, and with torchrun's variables
(RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) set by hand, since Debian's torchrun 1.13 fails
before starting workers under Python 3.11 (AttributeError in elastic's to_map)."""
import os
import subprocess
import sys
import tempfile

import world


def looks_complete(output: str) -> bool:
    return all(f"epoch {epoch}: mean loss" in output for epoch in range(3)) and \
        "matches every rank" in output


def under_tuttirun(tuttirun: str, example: str, directory: str) -> bool:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    command = [tuttirun, "-n", "2", "--timeout", str(world.CHILD_TIMEOUT_S), sys.executable,
               example, "--checkpoint", os.path.join(directory, "tuttirun.pt")]
    result = subprocess.run(command, env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, timeout=world.CHILD_TIMEOUT_S + 30)
    print("--- tuttirun -n 2:", result.returncode)
    print(result.stdout, end="")
    return result.returncode == 0 and looks_complete(result.stdout)


def with_torchrun_variables(example: str, directory: str) -> bool:
    command = [sys.executable, example, "--checkpoint", os.path.join(directory, "env.pt")]
    results = world.spawn(command, 2)
    for rank, result in enumerate(results):
        print(f"--- torchrun variables, rank {rank}: {result.returncode}")
        print(result.stdout, end="")
    return all(r.returncode == 0 for r in results) and looks_complete(results[0].stdout)


if __name__ == "__main__":
    tuttirun_path, example_path = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as scratch:
        ok = under_tuttirun(tuttirun_path, example_path, scratch)
        ok = with_torchrun_variables(example_path, scratch) and ok
    sys.exit(0 if ok else 1)
