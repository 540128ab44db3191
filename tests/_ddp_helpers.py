"""Worker for the DDP and FSDP tests. It lives in an importable module: spawned processes import it."""

import torch

from pilot.engine.build import build_trainer, configure_threads
from pilot.engine.distributed import DistContext, init_from_env, launched_externally
from pilot.engine.sharding import full_model_state


def train_and_save(cfg, out_path: str, updates: int) -> None:
    ctx = init_from_env("gloo", torch.device("cpu")) if launched_externally() else DistContext()
    configure_threads(cfg)
    trainer = build_trainer(cfg, ctx)
    losses = [trainer.train_step().loss for _ in range(updates)]
    params = full_model_state(trainer.raw_model)  # FSDP: gathered from every rank
    if ctx.is_main:
        torch.save(
            {
                "params": {k: v.cpu() for k, v in params.items()},
                "losses": losses,
                "examples_seen": trainer.examples_seen,
                "sharded": trainer.sharded,
            },
            out_path,
        )


def estimate_and_save(cfg, out_path: str) -> None:
    """Rank 0's memory measured on real tensors by the same tracker (``estimate_memory(fake=False)``),
    every rank running the engine's sharded update."""
    from pilot.estimate.fake_tensor import estimate_memory

    init_from_env("gloo", torch.device("cpu"))
    configure_threads(cfg)
    measured = estimate_memory(cfg, fake=False)
    if torch.distributed.get_rank() == 0:
        torch.save(
            {
                "peaks": {p.phase: p.peak_bytes for p in measured.phases},
                "moments": {p.phase: p.moments for p in measured.phases},
                "state": measured.state_bytes,
                "closed_form": measured.closed_form,
            },
            out_path,
        )


class LearningRateTampering:
    """A ``JobRunner`` that doubles the learning rates a sharded checkpoint's schedule saved, then
    runs the resume as usual: a planted fault the resume check must catch."""

    def run(self, module: str, args: list[str], timeout_s: float):
        from pathlib import Path

        from pilot.child_process import NewProcess

        (checkpoint,) = (Path(args[0]) / "checkpoints").glob("ckpt-*.dcp")
        state = torch.load(checkpoint / "state.pt", weights_only=True)
        state["scheduler"]["base_lrs"] = [2 * lr for lr in state["scheduler"]["base_lrs"]]
        torch.save(state, checkpoint / "state.pt")
        return NewProcess().run(module, args, timeout_s)


def resume_check_and_save(cfg, work_dir: str, tamper: bool) -> None:
    """The pilot's resume check as every FSDP rank runs it; rank 0 writes (verdict, reason)."""
    import json
    from pathlib import Path

    from pilot.phases.resume_check import run_resume_check

    ctx = init_from_env("gloo", torch.device("cpu"))
    configure_threads(cfg)
    runner = LearningRateTampering() if tamper else None
    verdict = run_resume_check(cfg, torch.device("cpu"), Path(work_dir), runner=runner, ctx=ctx)
    if ctx.is_main:
        (Path(work_dir) / "verdict.json").write_text(json.dumps(list(verdict)))
