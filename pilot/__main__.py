"""Entry point: ``python -m pilot [overrides]`` (Hydra app; ``-m`` for multirun)."""
from __future__ import annotations

from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from pilot.config import register
from pilot.train import train

register()
CONF_DIR = str(Path(__file__).resolve().parents[1] / "conf")  # absolute: works for `pilot` too


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def main(cfg: DictConfig) -> None:
    hydra_cfg = HydraConfig.get()
    train(cfg, Path(hydra_cfg.runtime.output_dir), overrides=list(hydra_cfg.overrides.task))


if __name__ == "__main__":
    main()
