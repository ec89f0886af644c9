"""The peers' side of the multi-GPU benchmark (issue 22): torch.distributed
with the NCCL backend, one process per GPU, and torch's peer copies.

Writes peers_multi_gpu.json in the current folder:
  allreduce_busbw_GBps: {bytes: bus bandwidth} for float32 all_reduce (sum),
      as nccl-tests reports it (algorithm bandwidth * 2(n-1)/n), from the
      wall time of 20 back-to-back calls on rank 0 after 5 warm-up calls;
  peer_copy_GBps: {bytes: GB/s} for x.to('cuda:1') of a cuda:0 tensor;
  ranks, gpu, torch, nccl.

Run: python3 bench/peers_multi_gpu.py  (needs at least two GPUs)
"""

import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES = [1 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30]
WARMUP = 5
ITERS = 20


def worker(rank, world, port, queue):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    out = {}
    for nbytes in SIZES:
        x = torch.ones(nbytes // 4, dtype=torch.float32, device="cuda")
        for _ in range(WARMUP):
            dist.all_reduce(x)
        # As nccl-tests times it (and as tilebook's side does): the wall
        # time of ITERS back-to-back calls, every GPU idle before and after.
        dist.barrier()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(ITERS):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        dist.barrier()
        times = [(time.perf_counter() - t0) / ITERS]
        t = statistics.median(times)
        out[nbytes] = nbytes / t * 2 * (world - 1) / world / 1e9
        del x
    if rank == 0:
        queue.put(out)
    dist.barrier()
    dist.destroy_process_group()


def peer_copy():
    out = {}
    for nbytes in SIZES:
        x = torch.ones(nbytes // 4, dtype=torch.float32, device="cuda:0")
        y = torch.empty_like(x, device="cuda:1")
        for _ in range(3):
            y.copy_(x)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(ITERS):
            y.copy_(x)
        torch.cuda.synchronize()
        times = [(time.perf_counter() - t0) / ITERS]
        out[nbytes] = nbytes / statistics.median(times) / 1e9
    return out


def main():
    world = torch.cuda.device_count()
    if world < 2:
        print("peers_multi_gpu: needs two GPUs, this machine has %d" % world)
        return 1
    world = 2
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = 29500 + os.getpid() % 1000
    procs = [ctx.Process(target=worker, args=(r, world, port, queue)) for r in range(world)]
    for p in procs:
        p.start()
    busbw = queue.get(timeout=300)
    for p in procs:
        p.join()
    result = {
        "ranks": world,
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "nccl": ".".join(map(str, torch.cuda.nccl.version())),
        "allreduce_busbw_GBps": {str(k): v for k, v in busbw.items()},
        "peer_copy_GBps": {str(k): v for k, v in peer_copy().items()},
        "p2p": torch.cuda.can_device_access_peer(0, 1),
    }
    with open("peers_multi_gpu.json", "w") as f:
        json.dump(result, f, indent=1)
    for k, v in result["allreduce_busbw_GBps"].items():
        print("torch.distributed all_reduce %11s bytes: bus bandwidth %7.1f GB/s" % (k, v))
    for k, v in result["peer_copy_GBps"].items():
        print("torch peer copy %11s bytes: %7.1f GB/s" % (k, v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
