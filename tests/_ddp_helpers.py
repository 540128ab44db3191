"""Worker for the DDP tests. It lives in an importable module: spawned processes import it."""

import torch

from pilot.engine.build import build_trainer, configure_threads
from pilot.engine.distributed import DistContext, init_from_env, launched_externally


def train_and_save(cfg, out_path: str, updates: int) -> None:
    ctx = init_from_env("gloo", torch.device("cpu")) if launched_externally() else DistContext()
    configure_threads(cfg)
    trainer = build_trainer(cfg, ctx)
    losses = [trainer.train_step().loss for _ in range(updates)]
    if ctx.is_main:
        torch.save(
            {"params": trainer.raw_model.state_dict(), "losses": losses, "examples_seen": trainer.examples_seen},
            out_path,
        )
