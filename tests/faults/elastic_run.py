#!/usr/bin/env python3
"""tuttirun --elastic with real processes: 4 ranks of a data-parallel example, one SIGKILLed at
step 20 or later. The example is examples/elastic_regression (seeded linear regression, gradients
averaged by the bucketing layer) or examples/elastic_ddp.py (a network trained by PyTorch's DDP
over tutti_torch.elastic's group). Scenarios:

  replace    --elastic 1: the 3 survivors shrink, tuttirun starts a replacement, they grow back
             to 4 and it gets the model (and optimizer state) by broadcast; the job must exit 0,
             tuttirun must name the dead rank and say no replacement is left, and all 4 ranks
             must end at the last step with the same parameters (bitwise), within tolerance of
             an uninterrupted run's
  spent      --elastic 1, and the replacement is killed too once it joined: tuttirun must stop
             the job with the replacement's status (137), saying --elastic 1 is spent
  no-elastic --elastic 0 (as before the flag): the job fails with 137 naming the dead rank, and no
             replacement is started
  shrunk     no --elastic, a long --grace: the survivors shrink and finish on 3 ranks (averaging
             over 3); their parameters must agree with each other bitwise and with the
             uninterrupted run's within tolerance, and the job still exits 137
  shrunk-twice (elastic_ddp.py) as shrunk, and a second rank is killed as it starts recovering:
             whether it dies before, during or after the survivors' shrink (the recovery is
             tried again), the 2 left finish as above
  resume     (elastic_ddp.py) a job stopped after step 30 with rank 0's checkpoint, then started
             again: it resumes from the checkpoint and ends as an uninterrupted run
  bad-flag   --elastic -1, x, 1.5: usage error 2 naming the value

The uninterrupted run: elastic_regression on 4 ranks; elastic_ddp.py --reference, one process
without distribution taking each step's whole batch. elastic_ddp.py's rank 0 also prints each
step's loss: every step's must appear once and agree with the uninterrupted run's.

Tolerance: the parameters are float64, each step's gradient the sum over the world of the same
per-sample terms (64 a step for the regression, 48 for the network); a different world size only
changes the order of that sum (and a *W/W scaling), so each step's gradient differs by a few ulps
(< 64 * 2^-53 relative to the sum of the terms' magnitudes); gradient descent with this small a
rate on these smooth losses does not amplify a perturbation much, so after 60 steps the
difference is far below 1e-12 at the parameters' scale (~1; measured: <= 1e-15 for both). 1e-9
leaves a margin and is still far below what a skipped or repeated step, lost momentum, or
gradients averaged over the wrong world size change (>= 1e-3 here: the runs are 60 steps from
convergence, not at the optimum, where any trajectory would agree).

  elastic_run.py TUTTIRUN EXAMPLE SCENARIO [--seed S]   (FAULT_SEED overrides the seed)
"""

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from job import driver_args  # noqa: E402

NRANKS, STEPS, BOUND_S, TOLERANCE = 4, 60, 60, 1e-9


class Launch:
    """tuttirun running the example, its stdout and stderr read line by line."""

    def __init__(self, argv, env):
        self.lines = []
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, errors="replace")
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def await_line(self, pattern):
        """The first match of pattern in a line; None when the job ends or BOUND_S passes first."""
        deadline = time.monotonic() + BOUND_S
        while time.monotonic() < deadline:
            for line in list(self.lines):
                match = re.search(pattern, line)
                if match:
                    return match
            if self.proc.poll() is not None:
                self.drain()
                return next((m for m in map(lambda l: re.search(pattern, l), self.lines) if m),
                            None)
            time.sleep(0.01)
        return None

    def finish(self):
        try:
            code = self.proc.wait(BOUND_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            code = "hung"
        self.drain()
        return code

    def drain(self):
        # The process can end before the reader has taken its last lines from the pipe (seen on
        # a loaded CI machine: exit 2 with no output yet); the pipe closes with the process.
        self.reader.join(BOUND_S)

    def output(self):
        return "\n".join(self.lines)


def finals(lines):
    """{rank: (step, [parameters])} from the "final" lines."""
    result = {}
    for line in lines:
        match = re.match(r"final rank (\d+) step (\d+) parameters (.*)$", line)
        if match:
            result[int(match[1])] = (int(match[2]), [float.fromhex(v) for v in match[3].split()])
    return result


def losses(lines):
    """[(step, loss)] from the "loss step" lines, in order."""
    found = (re.match(r"loss step (\d+) (\S+)$", line) for line in lines)
    return [(int(m[1]), float.fromhex(m[2])) for m in found if m]


def relative_difference(a, b):
    return abs(a - b) / max(1.0, abs(b))


def compare_losses(got, reference):
    """Problems with a run's loss curve against the uninterrupted one's: every step's loss once,
    within tolerance."""
    steps = [step for step, _ in got]
    if sorted(steps) != list(range(STEPS)):
        return [f"losses for steps {steps}, expected each of 0..{STEPS - 1} once"]
    expected = dict(reference)
    worst = max(relative_difference(loss, expected[step]) for step, loss in got)
    print(f"largest loss difference from the uninterrupted run: {worst:.3g}")
    return [] if worst <= TOLERANCE else [f"the loss curve differs by {worst:.3g} > {TOLERANCE}"]


def compare(got, reference, ranks):
    """Problems with the final parameters of ranks against the uninterrupted run's."""
    problems = []
    if sorted(got) != ranks:
        return [f"final parameters from ranks {sorted(got)}, expected {ranks}"]
    first = got[ranks[0]]
    for r in ranks:
        step, values = got[r]
        if step != STEPS:
            problems.append(f"rank {r} ended at step {step}, not {STEPS}")
        if values != first[1]:
            problems.append(f"rank {r}'s parameters differ from rank {ranks[0]}'s: {values} vs "
                            f"{first[1]}")
    worst = max(relative_difference(a, b) for a, b in zip(first[1], reference))
    print(f"largest difference from the uninterrupted run: {worst:.3g} "
          f"({'bitwise equal' if first[1] == reference else 'not bitwise'})")
    if worst > TOLERANCE:
        problems.append(f"parameters {first[1]} differ from the uninterrupted run's {reference} "
                        f"by {worst:.3g} > {TOLERANCE}")
    return problems


def program(example):
    """The command that runs the example: a Python one under this driver's interpreter (the
    one with torch)."""
    return [sys.executable, example] if example.endswith(".py") else [example]


def run(tuttirun, example, options, env, step_ms, steps=STEPS, extra=()):
    return Launch([tuttirun] + options + ["-n", str(NRANKS)] + program(example) +
                  ["--steps", str(steps), "--step-ms", str(step_ms), *extra], env)


def uninterrupted(tuttirun, example, env):
    """The lines of the run to reproduce, or None (its output printed) when it failed."""
    if example.endswith(".py"):
        launch = Launch(program(example) + ["--reference", "--steps", str(STEPS)], env)
        ranks = 1
    else:
        launch = run(tuttirun, example, [], env, 0)
        ranks = NRANKS
    if launch.finish() != 0 or len(finals(launch.lines)) != ranks:
        print(f"the uninterrupted run failed:\n{launch.output()}")
        return None
    return launch.lines


def kill_at_step(launch, victim, step=20):
    """SIGKILLs rank victim once it reports step `step`; its pid, or None."""
    match = launch.await_line(rf"^rank {victim} pid (\d+) step {step}$")
    if match:
        os.kill(int(match[1]), signal.SIGKILL)
        return int(match[1])
    return None


def scenario(name, tuttirun, example, rng, env):
    if name == "bad-flag":
        problems = []
        for value in ["-1", "x", "1.5"]:
            launch = Launch([tuttirun, "--elastic", value, "-n", "2", example], env)
            code = launch.finish()
            expected = f"--elastic: expected a number of replacements from 0 to 1000000, " \
                       f"got '{value}'"
            if code != 2 or expected not in launch.output():
                problems.append(f"--elastic {value}: exit {code}, output {launch.output()!r}")
        return problems

    reference = uninterrupted(tuttirun, example, env)
    if reference is None:
        return ["the uninterrupted run failed"]
    expected = finals(reference)[0][1]
    if name == "resume":
        return resumed(tuttirun, example, env, reference)

    victim = rng.randrange(1, NRANKS)  # rank 0 hosts the store the survivors agree over
    print(f"victim: rank {victim}")
    options = {"replace": ["--elastic", "1"], "spent": ["--elastic", "1", "--grace", "1"],
               "no-elastic": ["--elastic", "0", "--grace", "1"], "shrunk": ["--grace", "60"],
               "shrunk-twice": ["--grace", "60"]}[name]
    launch = run(tuttirun, example, options, env, 20)
    pid = kill_at_step(launch, victim)
    if pid is None:
        launch.finish()
        return [f"rank {victim} never reported step 20:\n{launch.output()}"]
    died = f"rank {victim} (pid {pid}) was killed by signal 9 (Killed)"
    replacement = None
    if name == "shrunk-twice":
        second = rng.choice([r for r in range(1, NRANKS) if r != victim])
        print(f"second victim: rank {second}, once it starts recovering")
        known = launch.await_line(rf"^rank {second} pid (\d+) step 10$")
        if known and launch.await_line(rf"^rank {second}: step \d+ failed"):
            os.kill(int(known[1]), signal.SIGKILL)
    if name == "spent":
        joined = launch.await_line(r"^rank 3 pid (\d+) joined at step (\d+)$")
        if joined:
            replacement = int(joined[1])
            os.kill(replacement, signal.SIGKILL)
    code = launch.finish()
    out = launch.output()
    problems = []

    def expect(condition, what):
        if not condition:
            problems.append(what)

    if name == "replace":
        expect(code == 0, f"exit {code}, expected 0")
        expect(f"{died}; started replacement 1 (pid" in out and
               "to join the survivors as rank 3 of 4; 0 replacements left" in out,
               "tuttirun did not say it replaced the dead rank")
        expect(re.search(r"^rank 3 pid \d+ joined at step (2\d|3\d)$", out, re.M),
               "the replacement did not join at the step of the death")
        problems += compare(finals(launch.lines), expected, list(range(NRANKS)))
    elif name == "spent":
        expect(replacement is not None, "the replacement never joined")
        expect(code == 128 + signal.SIGKILL, f"exit {code}, expected 137")
        expect(f"replacement 1 (rank 3, pid {replacement}) was killed by signal 9 (Killed); "
               f"no replacements left (--elastic 1 spent): stopping the job" in out,
               "tuttirun did not say the replacements were spent")
        expect(not finals(launch.lines), "ranks finished although the job was stopped")
    elif name == "no-elastic":
        expect(code == 128 + signal.SIGKILL, f"exit {code}, expected 137")
        expect(f"tuttirun: {died}\n" in out + "\n", "tuttirun did not name the dead rank")
        expect("replacement" not in out, "a replacement was started without --elastic")
    elif name in ("shrunk", "shrunk-twice"):
        expect(code == 128 + signal.SIGKILL, f"exit {code}, expected 137 (the dead rank's)")
        dead = 1 if name == "shrunk" else 2
        problems += compare(finals(launch.lines), expected, list(range(NRANKS - dead)))
    if name in ("replace", "shrunk", "shrunk-twice") and example.endswith(".py"):
        problems += compare_losses(losses(launch.lines), losses(reference))
    if problems:
        problems.append(f"output:\n{out}")
    return problems


def resumed(tuttirun, example, env, reference):
    """Problems with a job stopped after step 30 and started again from rank 0's checkpoint."""
    checkpoint = os.path.join(env["TMPDIR"], "checkpoint.pt")
    extra = ["--checkpoint", checkpoint, "--checkpoint-every", "10"]
    first = run(tuttirun, example, [], env, 0, steps=STEPS // 2, extra=extra)
    first_code = first.finish()
    second = run(tuttirun, example, [], env, 0, extra=extra)
    code = second.finish()
    problems = []
    if first_code != 0 or code != 0:
        problems.append(f"exit {first_code}, then {code}; expected 0 twice")
    if not any(f"resumes from {checkpoint} at step {STEPS // 2}" in line for line in second.lines):
        problems.append(f"the second run did not resume from the checkpoint at step {STEPS // 2}")
    problems += compare(finals(second.lines), finals(reference)[0][1], list(range(NRANKS)))
    problems += compare_losses(losses(first.lines + second.lines), losses(reference))
    os.remove(checkpoint)
    if problems:
        problems.append(f"output:\n{first.output()}\n---\n{second.output()}")
    return problems


def main():
    args, seed, rng = driver_args(["tuttirun", "example", "scenario"])
    print(f"seed {seed}")
    with tempfile.TemporaryDirectory() as tmp:
        # The elastic directory tuttirun makes goes under TMPDIR: it must be gone at the end.
        env = dict(os.environ, TMPDIR=tmp)
        problems = scenario(args.scenario, args.tuttirun, args.example, rng, env)
        if os.listdir(tmp):
            problems.append(f"left in TMPDIR: {os.listdir(tmp)}")
    for problem in problems:
        print(f"FAIL: {problem}")
    if not problems:
        print(f"ok: {args.scenario}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
