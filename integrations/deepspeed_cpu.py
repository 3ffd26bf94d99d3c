"""Run DeepSpeed in one CPU process, without its C++ JIT builds (examples, tests, laptops).

DeepSpeed compiles a shared-memory collective op the first time its communication backend starts
(about 45 s), even with gloo. For a single process it brings nothing, so it is marked incompatible
before the backend starts; DeepSpeed then uses plain ``torch.distributed`` with gloo.
Use ``"torch_adam": true`` in the optimizer params to skip the FusedAdam build as well.
"""
from __future__ import annotations

import os
import socket

# The op DeepSpeed would JIT-build for CPU collectives (`ShareMemCommBuilder.NAME`).
_SHM_COMM_OP = "deepspeed_shm_comm"


def free_port() -> int:
    """A TCP port nothing listens on now, for ``MASTER_PORT``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def init_single_process_cpu(port: int | None = None) -> None:
    """Start (once per process) a one-rank gloo process group for DeepSpeed on CPU.

    Sets ``DS_ACCELERATOR=cpu`` and the rendezvous variables when they are not set already, so
    call it before ``deepspeed`` is first imported if the machine also has a GPU.
    """
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    for key, value in (("MASTER_ADDR", "127.0.0.1"), ("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1")):
        os.environ.setdefault(key, value)
    import deepspeed
    import deepspeed.comm as ds_dist
    import deepspeed.ops

    if ds_dist.is_initialized():
        return
    os.environ.setdefault("MASTER_PORT", str(port or free_port()))
    # the probe result is cached in the module, so this edit holds for the backend start below
    deepspeed.ops.__compatible_ops__[_SHM_COMM_OP] = False
    deepspeed.init_distributed(dist_backend="gloo", verbose=False)
