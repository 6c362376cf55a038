"""PyTorch 1.13's own distributed suite over tutti, side by side with gloo (issue 19).

Runs torch.testing._internal.distributed.distributed_test.DistributedTest._DistTestBase as
test/distributed/test_distributed_spawn.py does: BACKEND set, file:// init in a fresh temporary
directory per test, WORLD_SIZE processes spawned per test, each test under a deadline (torch 1.13
can hang at shutdown).

    torch_suite.py compare [--world-sizes 2 3] [--backends gloo tutti] [--tests NAME ...]
                           [--timeout S] [--log-dir DIR]
        Runs the tests (all of the class by default) per backend and world size, one process
        per (backend, world size), and prints every test that passes on gloo but not on tutti,
        with tutti's error. Those that cannot pass for a plug-in backend in torch 1.13 are listed
        apart with the reason (PLUGIN_LIMITS). With --backends tutti alone, every test named
        must pass on tutti. Exit status 0 when nothing else is listed.
    torch_suite.py run BACKEND WORLD_SIZE [NAME ...]
        One backend and world size in this process (what compare starts); prints one line
        "SUITE-RESULTS <json>": {test: [outcome, detail]}.

Only here, never in tutti, the suite's own checks of the backend's name treat tutti as gloo:
many tests are skipped or take another branch for any name but "gloo" (DDP on CPU, get_future,
object collectives), and a plug-in should pass what gloo passes. Debian's torch cannot import
ReplicatedTensor under Python 3.11, so that DDP feature stays off (DDP's default); Debian has no
expecttest, so suite_stubs/ stands in for it (the distributed suite never uses it).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE_BACKEND = "TORCH_SUITE_BACKEND"
RESULTS_MARK = "SUITE-RESULTS "

# Tests that pass on gloo and cannot pass on a plug-in backend in torch 1.13, whatever it
# implements: torch's Python code checks for the name "gloo" itself.
PLUGIN_LIMITS = {
    "test_monitored_barrier_allreduce_hang":
        "monitored_barrier: torch 1.13's Python refuses any backend but gloo by name",
    "test_monitored_barrier_allreduce_hang_wait_all_ranks":
        "monitored_barrier: torch 1.13's Python refuses any backend but gloo by name",
    "test_monitored_barrier_failure_order":
        "monitored_barrier: torch 1.13's Python refuses any backend but gloo by name",
    "test_monitored_barrier_gloo":
        "monitored_barrier: torch 1.13's Python refuses any backend but gloo by name",
    "test_monitored_barrier_gloo_rank_0_timeout":
        "monitored_barrier: torch 1.13's Python refuses any backend but gloo by name",
    "test_monitored_barrier_gloo_subgroup":
        "monitored_barrier: torch 1.13's Python refuses any backend but gloo by name",
    "test_monitored_barrier_wait_all_ranks":
        "monitored_barrier: torch 1.13's Python refuses any backend but gloo by name",
}


class TuttiNamedLikeGloo(str):
    """The suite's BACKEND in a tutti run: the string "tutti", which init_process_group gets,
    but equal to "gloo" too (and hashed like it, for the suite's sets of backend names)."""

    def __eq__(self, other):
        return isinstance(other, str) and str(other) in ("gloo", "tutti")

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash("gloo")


def load_suite_class():
    """Imports the suite as gloo would see it and returns the spawning test class; in a tutti
    run, BACKEND then becomes tutti-named-like-gloo."""
    backend = os.environ[SUITE_BACKEND]
    try:
        import expecttest  # noqa: F401
    except ImportError:
        sys.path.insert(0, os.path.join(HERE, "suite_stubs"))
    # Decorators read BACKEND when the suite is imported: they see gloo's name.
    os.environ["BACKEND"] = "gloo"
    import torch
    import torch.nn.parallel._replicated_tensor_ddp_utils as replicated

    replicated._set_ddp_with_replicated_tensor = lambda value: None
    if backend == "tutti":
        import tutti_torch  # noqa: F401  registers the backend
    from torch.testing._internal.distributed import distributed_test

    if backend == "tutti":
        distributed_test.BACKEND = TuttiNamedLikeGloo("tutti")

    class TestDistBackendWithSpawn(distributed_test.TestDistBackend,
                                   distributed_test.DistributedTest._DistTestBase):
        def setUp(self):
            super().setUp()
            self._spawn_processes()
            torch.backends.cudnn.flags(enabled=True, allow_tf32=False).__enter__()

    return TestDistBackendWithSpawn


if __name__ == "__main__" and len(sys.argv) > 3 and sys.argv[1] == "run":
    os.environ[SUITE_BACKEND] = sys.argv[2]
    os.environ["WORLD_SIZE"] = sys.argv[3]
    # As torch's run_test.py sets it for test_distributed_spawn (the suite reads it on import):
    # tests that re-initialise the group use it.
    INIT_DIR = tempfile.mkdtemp()
    os.environ["INIT_METHOD"] = "file://" + os.path.join(INIT_DIR, "shared_init_file")
# Spawned children import this file again (as __mp_main__), the environment says what to run,
# and they unpickle the class from it.
if os.environ.get(SUITE_BACKEND):
    TestDistBackendWithSpawn = load_suite_class()
    TestDistBackendWithSpawn.__qualname__ = "TestDistBackendWithSpawn"


class RecordingResult(unittest.TextTestResult):
    """Keeps each test's outcome and the last line of its error."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.outcomes = {}

    @staticmethod
    def name(test):
        return test.id().split(".")[-1]

    def addSuccess(self, test):
        super().addSuccess(test)
        self.outcomes[self.name(test)] = ["pass", ""]

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.outcomes[self.name(test)] = ["skip", reason]

    def _failed(self, test, err):
        # The children's tracebacks end in C++ frames: the last "...Error: ..." line says more.
        lines = self._exc_info_to_string(err, test).splitlines()
        errors = [line for line in lines if re.match(r"^\w+(Error|Exception)\b", line)]
        self.outcomes[self.name(test)] = ["fail", (errors or lines or ["?"])[-1]]

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._failed(test, err)

    def addError(self, test, err):
        super().addError(test, err)
        self._failed(test, err)


def all_test_names():
    from torch.testing._internal.distributed.distributed_test import DistributedTest

    return sorted(name for name in dir(DistributedTest._DistTestBase) if name.startswith("test_"))


def run(names):
    loader = unittest.TestLoader()
    names = names or all_test_names()
    suite = unittest.TestSuite(
        loader.loadTestsFromName(name, TestDistBackendWithSpawn) for name in names)
    runner = unittest.TextTestRunner(resultclass=RecordingResult, verbosity=2, stream=sys.stdout)
    result = runner.run(suite)
    print(RESULTS_MARK + json.dumps(result.outcomes), flush=True)
    shutil.rmtree(INIT_DIR, ignore_errors=True)  # the suite's setUp resets INIT_METHOD itself
    sys.stderr.flush()
    os._exit(0)  # torch 1.13 can hang at interpreter shutdown


def run_one_world(backend, world_size, names, timeout, log_dir):
    """Runs names (all when empty) in a child process; returns {test: [outcome, detail]}."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               DISTRIBUTED_TESTS_DEFAULT_TIMEOUT=str(timeout))
    env.pop("TEMP_DIR", None)
    count = len(names) if names else 300
    log_path = os.path.join(log_dir, f"{backend}-{world_size}.log")
    started = time.time()
    with open(log_path, "w") as log:
        try:
            done = subprocess.run([sys.executable, os.path.abspath(__file__), "run", backend,
                                   str(world_size), *names],
                                  env=env, stdout=subprocess.PIPE, stderr=log, text=True,
                                  timeout=count * (timeout + 30), check=False)
            output = done.stdout
        except subprocess.TimeoutExpired as expired:
            output = expired.stdout or ""
        log.write(output)
    print(f"{backend} world {world_size}: {time.time() - started:.0f} s, log {log_path}",
          flush=True)
    for line in output.splitlines():
        if line.startswith(RESULTS_MARK):
            return json.loads(line[len(RESULTS_MARK):])
    return {name: ["fail", f"no result (see {log_path})"] for name in names}


def compare(args):
    os.makedirs(args.log_dir, exist_ok=True)
    unexplained = []
    for world_size in args.world_sizes:
        results = {backend: run_one_world(backend, world_size, args.tests, args.timeout,
                                           args.log_dir)
                   for backend in args.backends}
        tutti = results.get("tutti", {})
        if "gloo" in results:
            gloo = results["gloo"]
            expected = [name for name, (outcome, _) in sorted(gloo.items()) if outcome == "pass"]
            print(f"world {world_size}: gloo passes {len(expected)} of {len(gloo)}; tutti "
                  f"passes {sum(1 for o, _ in tutti.values() if o == 'pass')}")
        else:
            expected = args.tests or sorted(tutti)
        for name in expected:
            outcome, detail = tutti.get(name, ["missing", ""])
            if outcome == "pass":
                continue
            if name in PLUGIN_LIMITS:
                print(f"  world {world_size} {name}: {outcome} on tutti, cannot pass for a "
                      f"plug-in: {PLUGIN_LIMITS[name]}")
            else:
                print(f"  world {world_size} {name}: passes on gloo, {outcome} on tutti: {detail}")
                unexplained.append((world_size, name))
    print(f"{len(unexplained)} test(s) fail on tutti and pass on gloo, unexplained")
    return 1 if unexplained else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("run")
    one.add_argument("backend", choices=["gloo", "tutti"])
    one.add_argument("world_size", type=int)
    one.add_argument("tests", nargs="*")
    both = commands.add_parser("compare")
    both.add_argument("--world-sizes", type=int, nargs="+", default=[2, 3])
    both.add_argument("--backends", nargs="+", choices=["gloo", "tutti"],
                      default=["gloo", "tutti"])
    both.add_argument("--tests", nargs="*", default=[])
    both.add_argument("--timeout", type=int, default=90, help="seconds per test")
    both.add_argument("--log-dir", default=os.path.join(os.getcwd(), "torch-suite-logs"))
    args = parser.parse_args()
    if args.command == "run":
        run(args.tests)
    sys.exit(compare(args))


if __name__ == "__main__":
    main()
