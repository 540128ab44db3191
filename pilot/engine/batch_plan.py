"""Batch arithmetic: how many examples an update holds and how many updates a budget buys.

examples per update = micro-batch x accumulation x data-parallel replicas
(DESIGN.md section 4; model/tensor parallelism does not multiply it).
The budget names the quantity a comparison holds fixed (updates, epochs or
examples); the others are derived here and recorded, never assumed.
Example from the design brief: 1 replica, micro-batch 2, accumulation 8,
3,200 examples, one pass -> 16 examples per update, 200 updates.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from pilot.config.values import enum_value


@dataclass(frozen=True)
class BatchPlan:
    micro_batch: int
    accumulation: int
    replicas: int
    train_examples: int  # size of the training split
    drop_last: bool  # drop each epoch's incomplete last update
    fixed: str  # "updates", "epochs" or "examples"
    value: int  # the fixed quantity's value

    @property
    def examples_per_update(self) -> int:
        return self.micro_batch * self.accumulation * self.replicas

    @property
    def full_updates_per_epoch(self) -> int:
        return self.train_examples // self.examples_per_update

    @property
    def remainder_per_epoch(self) -> int:
        """Examples left after the full updates of one epoch (a partial update, or dropped)."""
        return self.train_examples % self.examples_per_update

    @property
    def updates_per_epoch(self) -> int:
        partial = 1 if self.remainder_per_epoch and not self.drop_last else 0
        return self.full_updates_per_epoch + partial

    @property
    def examples_per_epoch(self) -> int:
        """Examples one epoch actually trains on (the dropped remainder excluded)."""
        if self.drop_last:
            return self.full_updates_per_epoch * self.examples_per_update
        return self.train_examples

    def update_sizes_in_epoch(self) -> list[int]:
        sizes = [self.examples_per_update] * self.full_updates_per_epoch
        if self.remainder_per_epoch and not self.drop_last:
            sizes.append(self.remainder_per_epoch)
        return sizes

    @property
    def total_updates(self) -> int:
        if self.fixed == "updates":
            return self.value
        if self.fixed == "epochs":
            return self.value * self.updates_per_epoch
        full_epochs, rest = divmod(self.value, self.examples_per_epoch)
        updates = full_epochs * self.updates_per_epoch
        for size in self.update_sizes_in_epoch():
            if rest <= 0:
                break
            if self.drop_last and rest < size:
                break  # an incomplete update is dropped, as within an epoch
            updates += 1
            rest -= size
        return updates

    def examples_in_update(self, update: int) -> int:
        """Examples in update number ``update`` (0-based), the budget's clipping included."""
        sizes = self.update_sizes_in_epoch()
        size = sizes[update % len(sizes)]
        if self.fixed == "examples" and not self.drop_last and update == self.total_updates - 1:
            before = self.examples_before(update)
            size = min(size, self.value - before)
        return size

    def examples_before(self, update: int) -> int:
        """Examples consumed by updates 0 .. update-1 (unclipped)."""
        full_epochs, offset = divmod(update, self.updates_per_epoch)
        return full_epochs * self.examples_per_epoch + sum(self.update_sizes_in_epoch()[:offset])

    @property
    def examples_seen(self) -> int:
        if self.total_updates == 0:
            return 0
        last = self.total_updates - 1
        return self.examples_before(last) + self.examples_in_update(last)

    @property
    def epochs(self) -> float:
        return self.examples_seen / self.examples_per_epoch

    @property
    def largest_update(self) -> int:
        """Examples the largest update holds: fewer than ``examples_per_update`` when the training
        split is smaller than one update (``drop_last=false`` keeps it as one smaller update), or the
        budget (``budget=examples``) buys fewer examples than one update."""
        largest = max(self.update_sizes_in_epoch(), default=0)
        return min(largest, self.examples_seen) if self.examples_seen else largest  # a budget of fewer examples

    def summary(self) -> dict:
        """The plan as recorded (run.json): what the updates hold, the declared product beside it
        when no update reaches it."""
        data = asdict(self)
        if self.largest_update < self.examples_per_update:
            data["declared_examples_per_update"] = self.examples_per_update
        data.update(
            examples_per_update=min(self.largest_update, self.examples_per_update) or self.examples_per_update,
            updates_per_epoch=self.updates_per_epoch,
            examples_per_epoch=self.examples_per_epoch,
            total_updates=self.total_updates,
            examples_seen=self.examples_seen,
            epochs=round(self.epochs, 4),
        )
        return data

    def describe(self) -> list[str]:
        """The derivation, one line per derived value, for the log and the report."""
        derived = {"updates": "updates", "epochs": "epochs", "examples": "examples"}
        derived.pop(self.fixed)
        incomplete = (
            ("dropped" if self.drop_last else "kept as a smaller update") if self.remainder_per_epoch else "none"
        )
        return [
            f"examples per update = {self.micro_batch} (micro-batch) x {self.accumulation} (accumulation)"
            f" x {self.replicas} (replicas) = {self.examples_per_update}",
            f"updates per epoch = {self.train_examples} examples / {self.examples_per_update}"
            f" = {self.full_updates_per_epoch} full + remainder {self.remainder_per_epoch} ({incomplete})"
            f" -> {self.updates_per_epoch}",
            f"held fixed: {self.fixed} = {self.value}; derived and recorded: "
            f"updates = {self.total_updates}, examples seen = {self.examples_seen},"
            f" epochs = {self.epochs:.4g}"
            f" (recorded, not fixed: {', '.join(derived)})",
        ] + (
            [
                f"no update reaches {self.examples_per_update} examples: "
                + (
                    f"the training split holds {self.train_examples}"
                    if self.train_examples < self.examples_per_update
                    else f"the budget buys {self.examples_seen}"
                )
                + f", so no update holds more than {self.largest_update} (recorded as "
                "examples_per_update; declared_examples_per_update keeps the product)"
            ]
            if 0 < self.largest_update < self.examples_per_update
            else []
        )


def plan_from_config(cfg, train_examples: int) -> BatchPlan:
    return BatchPlan(
        micro_batch=cfg.batch.micro_batch,
        accumulation=cfg.batch.accumulation,
        replicas=cfg.distributed.replicas,
        train_examples=train_examples,
        drop_last=cfg.batch.drop_last,
        fixed=enum_value(cfg.budget.fixed),
        value=cfg.budget.value,
    )


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)
