#!/usr/bin/python3
"""gloo_allreduce: torch.distributed all_reduce (backend gloo, float32, sum) swept over message
sizes, printing rows in tutti-bench's (nccl-tests') format for bench/compare-peers.

    /usr/bin/python3 bench/peers/gloo_allreduce.py --ranks 2 -b 8 -e 256M -f 2

It spawns the N ranks itself (MASTER_ADDR=127.0.0.1, a free port); Gloo's only transport here is
TCP over loopback. Method, as tutti-bench's: for each size `-w` untimed calls, a barrier, then
`iters` calls timed together; the time is each rank's loop time / iters, averaged over the ranks.
torch's all_reduce is in place: the timed loop reduces a pre-allocated tensor again and again
(the "out-of-place" column; no copy is timed). The iteration count is scaled down for large sizes
so that one size takes about `-s` seconds, never below 3 iterations, the same count on every rank.
One more call on fresh inputs checks the result (-c 0 skips it: N/A).
"""

import argparse
import os
import socket
import sys
import time

MIN_ITERS = 3


def parse_size(text):
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper()
    if t.endswith("B"):
        t = t[:-1]
    suffix = t[-1:] if t[-1:] in "KMG" else ""
    digits = t[: len(t) - len(suffix)]
    if not digits.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: not a size (a number with K, M or G)")
    return int(digits) * units[suffix]


def format_time(us):
    if us >= 10000.0:
        return f"{us:7.0f}"
    if us >= 100.0:
        return f"{us:7.1f}"
    return f"{us:7.2f}"


def sizes(opts):
    size = max(opts.minbytes, 4)
    while size <= opts.maxbytes:
        yield size
        size *= opts.stepfactor


def rank_main(rank, opts, port, queue):
    """One rank. Rank 0 puts its output lines on `queue`; every rank puts ("done", rank, error)."""
    error = None
    try:
        import torch
        import torch.distributed as dist

        torch.set_num_threads(1)
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        dist.init_process_group("gloo", rank=rank, world_size=opts.ranks)
        n = opts.ranks

        def emit(line):
            if rank == 0:
                queue.put(("line", line))

        emit(f"# gloo_allreduce: torch {torch.__version__}, backend gloo over TCP loopback")
        emit("# Command line: " + " ".join(sys.argv))
        emit(f"# nranks {n} minBytes {opts.minbytes} maxBytes {opts.maxbytes} "
             f"step: {opts.stepfactor}(factor) warmup iters: {opts.warmup} iters: {opts.iters} "
             f"(scaled to ~{opts.seconds:g}s per size, at least {MIN_ITERS}) "
             f"validation: {opts.check}\n#")
        emit(f"# {'':>10}  {'':>12}  {'':>8}  {'':>6}  {'':>6}           out-of-place")
        emit(f"# {'size':>10}  {'count':>12}  {'type':>8}  {'redop':>6}  {'root':>6}  "
             f"{'time':>7}  {'algbw':>6}  {'busbw':>6} {'#wrong':>6}")
        emit(f"# {'(B)':>10}  {'(elements)':>12}  {'':>8}  {'':>6}  {'':>6}  "
             f"{'(us)':>7}  {'(GB/s)':>6}  {'(GB/s)':>6}  {'':>5}")

        max_count = opts.maxbytes // 4
        buf = torch.full((max_count,), float(rank + 1), dtype=torch.float32)
        total_wrong = 0
        busbw_sum = 0.0
        rows = 0
        for nbytes in sizes(opts):
            count = nbytes // 4
            real_bytes = count * 4
            t = buf[:count]
            one = 0.0
            for _ in range(max(opts.warmup, 1)):
                t0 = time.perf_counter()
                dist.all_reduce(t, op=dist.ReduceOp.SUM)
                one = time.perf_counter() - t0
            slowest = torch.tensor([one], dtype=torch.float64)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
            iters = opts.iters
            if opts.seconds > 0 and slowest.item() * iters > opts.seconds:
                iters = min(opts.iters, max(MIN_ITERS, int(opts.seconds / slowest.item())))

            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(iters):
                dist.all_reduce(t, op=dist.ReduceOp.SUM)
            mine = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64)
            dist.all_reduce(mine, op=dist.ReduceOp.SUM)
            seconds = mine.item() / n

            wrong_text = "N/A"
            if opts.check:
                pattern = (torch.arange(count, dtype=torch.int64) % 7 + 1).to(torch.float32)
                t.copy_(pattern * (rank + 1))
                dist.all_reduce(t, op=dist.ReduceOp.SUM)
                expected = pattern * (n * (n + 1) // 2)
                wrong = torch.tensor([int((t != expected).sum().item())], dtype=torch.int64)
                dist.all_reduce(wrong, op=dist.ReduceOp.SUM)
                total_wrong += int(wrong.item())
                wrong_text = str(int(wrong.item()))
                t.fill_(float(rank + 1))

            algbw = real_bytes / 1.0e9 / seconds if seconds > 0 else 0.0
            busbw = algbw * (2.0 * (n - 1)) / n
            busbw_sum += busbw
            rows += 1
            emit(f"{real_bytes:12d}  {count:12d}  {'float':>8}  {'sum':>6}  {-1:6d}  "
                 f"{format_time(seconds * 1e6)}  {algbw:6.2f}  {busbw:6.2f}  {wrong_text:>5}")
        emit(f"# Out of bounds values : {total_wrong} {'FAILED' if total_wrong else 'OK'}")
        emit(f"# Avg bus bandwidth    : {busbw_sum / rows if rows else 0.0:g}\n#")
        dist.destroy_process_group()
        if total_wrong:
            error = f"{total_wrong} wrong elements"
    except BaseException as e:  # reported to the parent, which exits non-zero
        error = f"{type(e).__name__}: {e}"
    queue.put(("done", rank, error))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=2, help="processes to spawn (default 2)")
    p.add_argument("-b", "--minbytes", type=parse_size, default=8)
    p.add_argument("-e", "--maxbytes", type=parse_size, default=256 << 20)
    p.add_argument("-f", "--stepfactor", type=int, default=2)
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("-w", "--warmup", type=int, default=5)
    p.add_argument("-c", "--check", type=int, default=1)
    p.add_argument("-s", "--seconds", type=float, default=0.5,
                   help="scale -n down so that a size takes about this long (0: always -n)")
    p.add_argument("--timeout", type=float, default=3600,
                   help="give up (and fail) after this many seconds")
    opts = p.parse_args()
    if opts.ranks < 1 or opts.stepfactor < 2 or opts.iters < 1 or opts.maxbytes < opts.minbytes:
        p.error("need --ranks >= 1, -f >= 2, -n >= 1 and -e >= -b")

    try:
        import torch.distributed as dist
        if not dist.is_available() or not dist.is_gloo_available():
            print("gloo_allreduce: this torch has no gloo backend", file=sys.stderr)
            return 3
    except ImportError as e:
        print(f"gloo_allreduce: cannot import torch: {e}", file=sys.stderr)
        return 3

    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=rank_main, args=(r, opts, port, queue)) for r in range(opts.ranks)]
    for proc in procs:
        proc.start()
    errors = {}
    done = 0
    deadline = time.monotonic() + opts.timeout
    import queue as queue_mod
    while done < opts.ranks:
        try:
            msg = queue.get(timeout=1.0)
        except queue_mod.Empty:
            if time.monotonic() > deadline:
                if not errors:
                    errors[-1] = f"timed out after {opts.timeout:g}s"
                break
            dead = [i for i, proc in enumerate(procs) if proc.exitcode not in (None, 0)]
            if dead:
                errors[dead[0]] = f"rank {dead[0]} died with exit code {procs[dead[0]].exitcode}"
                break
            continue
        if msg[0] == "line":
            print(msg[1], flush=True)
        else:
            done += 1
            if msg[2]:
                errors[msg[1]] = msg[2]
                # The other ranks may be stuck in a collective with the failed one: give them a
                # few seconds to report, then stop them.
                deadline = min(deadline, time.monotonic() + 10)
    for proc in procs:
        proc.join(timeout=10 if not errors else 1)
        if proc.is_alive():
            proc.kill()
            proc.join()
    for rank, error in sorted(errors.items()):
        print(f"gloo_allreduce: rank {rank}: {error}" if rank >= 0 else f"gloo_allreduce: {error}",
              file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
