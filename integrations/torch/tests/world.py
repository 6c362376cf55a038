"""Runs a test script's worker function in N local processes, torchrun-style.

Each child gets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT and one BLAS thread
(OpenBLAS ignores torch.set_num_threads), and a deadline: a hang fails the test instead of
blocking CI. Children end with os._exit after flushing, because Debian's torch 1.13 can deadlock
at interpreter shutdown after DDP.
"""
import os
import socket
import subprocess
import sys
import traceback
from typing import Callable, Dict, List, Optional, Tuple

CHILD_TIMEOUT_S = 120


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def spawn(command: List[str], world_size: int, extra_env: Optional[Dict[str, str]] = None,
          timeout: float = CHILD_TIMEOUT_S) -> List[subprocess.CompletedProcess]:
    """Starts command in world_size processes; returns them finished (all killed when the
    deadline passes)."""
    port = str(free_port())
    children = []
    for rank in range(world_size):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world_size),
                   LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                   OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", TUTTI_TIMEOUT="60")
        env.update(extra_env or {})
        children.append(subprocess.Popen(command, env=env, text=True, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT))
    results = []
    for rank, child in enumerate(children):
        try:
            output, _ = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for other in children:
                other.kill()
            output, _ = child.communicate()
            output += f"\n[rank {rank} killed after {timeout} s]"
        results.append(subprocess.CompletedProcess(child.args, child.returncode, output))
    return results


def check_world(script: str, world_size: int, args: List[str],
                extra_env: Optional[Dict[str, str]] = None) -> bool:
    """spawn script --worker ARGS, print every rank's output, and say whether all exited 0."""
    return run_world(script, world_size, args, extra_env)[0]


def run_world(script: str, world_size: int, args: List[str],
              extra_env: Optional[Dict[str, str]] = None) -> Tuple[bool, List[str]]:
    """check_world's verdict, and every rank's output for tests that look for what it logged."""
    ok = True
    command = [sys.executable, script, "--worker", *args]
    results = spawn(command, world_size, extra_env)
    for rank, result in enumerate(results):
        status = "ok" if result.returncode == 0 else f"FAILED (exit {result.returncode})"
        print(f"--- {' '.join(args)} world {world_size} rank {rank}: {status}")
        print(result.stdout, end="")
        ok = ok and result.returncode == 0
    return ok, [result.stdout for result in results]


def worker_main(worker: Callable[[List[str]], None], final_barrier: bool = True) -> None:
    """In a child: run worker(args), report, and leave without interpreter shutdown."""
    import torch.distributed as dist

    code = 0
    try:
        worker(sys.argv[2:])
        # Rank 0 hosts the job's store: leaving before every rank is done with it (a
        # store-based barrier in new_group, say) resets the others' connections.
        if final_barrier:
            dist.barrier()
    except BaseException:  # every failure must reach the parent as output and an exit code
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def is_worker() -> bool:
    return len(sys.argv) > 1 and sys.argv[1] == "--worker"
