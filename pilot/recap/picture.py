"""recap.png: every training curve (one colour per variant; diverged runs dashed, with an x where
they stopped) and the validation points, one legend entry per variant: readable at 10,000 runs.

How 10,000 curves are drawn in about a second rather than five (bench/recap_10k.py):

- Every training point is read (metrics_reading.training_points), then each curve is decimated to
  the pixels it occupies: a curve with more than two points per pixel column it spans keeps its
  first and last point and, in each column, its lowest and highest point, in their order, so no
  spike is lost; a curve with fewer points is drawn whole.
- Curves of runs that did not diverge are drawn one pixel wide (Pillow, not antialiased) into one
  layer per variant, laid over the axes as an image: 10,000 curves overlap into bands, and as
  vectors they took longer than all the tables. Diverged runs, the ones a reader looks for, stay
  dashed vector lines with their x.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from pilot.faults import fault_point
from pilot.metrics_reading import plottable
from pilot.recap.reading import fork_is_safe, reader_start

FIGURE_INCHES, DPI = (12, 4.5), 110  # recap.png: 1320 x 495 pixels
LINE_WIDTH, LINE_ALPHA = 0.8, 0.8  # a training curve: its width (points: one pixel) and opacity


def decimated(columns: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Indices of the points kept of a curve whose points fall in pixel ``columns`` (drawing order):
    the first, the last, and the lowest and highest point of each run of points in one column."""
    count = len(columns)
    starts = np.concatenate(([0], np.flatnonzero(np.diff(columns) != 0) + 1))
    ends = np.append(starts[1:], count) - 1
    groups = np.repeat(np.arange(len(starts)), ends - starts + 1)
    order = np.lexsort((values, groups))  # each column's points together, lowest first
    return np.unique(np.concatenate(([0, count - 1], order[starts], order[ends])))


def _decimate(ax, curves: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The curves decimated (``decimated``, only where a curve has more than two points per pixel
    column it spans), in data coordinates and in the axes' pixels (x right, y down from the top)."""
    lengths = np.array([len(curve) for curve in curves])
    pixels = ax.transData.transform(np.concatenate(curves)) - (ax.bbox.x0, ax.bbox.y1)
    pixels[:, 1] *= -1
    columns = np.floor(pixels[:, 0])
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    spans = np.maximum.reduceat(columns, starts) - np.minimum.reduceat(columns, starts) + 1
    data, shown = list(curves), np.split(pixels, starts[1:])
    for index in np.flatnonzero(lengths > 2 * spans):
        keep = decimated(columns[starts[index] : starts[index] + lengths[index]], shown[index][:, 1])
        data[index], shown[index] = data[index][keep], shown[index][keep]
    return data, shown


def _raster(ax, layers: list[tuple[tuple, list[np.ndarray]]]) -> None:
    """Each (colour, curves in pixels) layer drawn one pixel wide, layer over layer, as an image over ``ax``."""
    from matplotlib.image import BboxImage  # matplotlib only when a picture is drawn (outputs.py)
    from PIL import Image, ImageDraw

    size = (max(1, math.ceil(ax.bbox.width)), max(1, math.ceil(ax.bbox.height)))
    canvas = Image.new("RGBA", size, (255, 255, 255, 0))
    for color, curves in layers:
        mask = Image.new("L", size, 0)
        draw = ImageDraw.Draw(mask)
        for curve in curves:
            (draw.line if len(curve) > 1 else draw.point)(curve.ravel().tolist(), fill=255)
        layer = Image.new("RGBA", size, tuple(round(255 * c) for c in color[:3]) + (0,))
        layer.putalpha(mask.point(lambda v: round(v * LINE_ALPHA)))
        canvas.alpha_composite(layer)
    image = BboxImage(ax.bbox, interpolation="nearest", origin="upper", zorder=1)
    image.set_data(np.asarray(canvas))
    ax.add_artist(image)


def _plottable(curves: list[np.ndarray]) -> list[np.ndarray]:
    """The curves with points (``plottable`` ones: collect gives only those; checked at once, not per curve)."""
    curves = [points for points in curves if len(points)]
    joined = np.concatenate(curves) if curves else np.empty((0, 2))
    if (np.isfinite(joined[:, 1]) & (joined[:, 1] > 0)).all():
        return curves
    return [points for points in map(plottable, curves) if len(points)]


def _groups(frame: pd.DataFrame, curves: dict[str, tuple], by: str, colors) -> list[dict]:
    """Per ``by`` value, then not diverged and diverged: colour, legend name, curves, validation points."""
    groups, none = [], (np.empty((0, 2)), [])
    for i, label in enumerate(sorted(frame[by].dropna().unique())):
        runs = frame[frame[by] == label]
        for diverged in (False, True):
            subset = [
                curves.get(run_dir, none) for run_dir in runs["run_dir"][(runs["status"] == "diverged") == diverged]
            ]
            train = _plottable([np.asarray(points, dtype=np.float64).reshape(-1, 2) for points, _ in subset])
            val = [point for _, points in subset for point in points if math.isfinite(point[1])]
            groups.append(
                {
                    "color": colors(i % 10),
                    "diverged": diverged,
                    "name": f"{label} ({len(subset)} run(s){', diverged' if diverged else ''})",
                    "train": train,
                    "val": np.array(val, dtype=np.float64).reshape(-1, 2),
                }
            )
    return groups


def _draw_train(ax, groups: list[dict]) -> None:
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D

    every = [points for group in groups for points in group["train"]]
    if not every:  # runs that failed before their first update: a log axis of nothing cannot be drawn
        ax.text(0.5, 0.5, "no run has a training point to draw", ha="center", va="center", transform=ax.transAxes)
        ax.set(xlabel="update", ylabel="training loss (per target)")
        return
    points = np.concatenate(every)
    columns = (points[:, 0], points[:, 1])  # one column at a time: numpy's axis=0 over 2 columns is slow
    ax.update_datalim([[c.min() for c in columns], [c.max() for c in columns]])  # decimation keeps both
    ax.autoscale_view()
    ax.set_yscale("log")
    for set_formatter in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):
        set_formatter(_plain_log_labels())
    layers, handles = [], []
    for group in (group for group in groups if group["train"]):
        style = {"linewidth": LINE_WIDTH, "alpha": LINE_ALPHA, "linestyle": "--" if group["diverged"] else "-"}
        handles.append(Line2D([], [], color=group["color"], label=group["name"], **style))
        data, pixels = _decimate(ax, group["train"])
        if not group["diverged"]:
            layers.append((group["color"], pixels))
            continue
        ax.add_collection(LineCollection(data, colors=[group["color"]], **style), autolim=False)
        ax.scatter(*np.array([points[-1] for points in data]).T, marker="x", s=60, color="red", zorder=3)
    if layers:
        _raster(ax, layers)
    ax.set(xlabel="update", ylabel="training loss (per target)")
    ax.set_title("loss curves (dashed + x: diverged, where it stopped)")
    ax.legend(handles=handles, fontsize=7, loc="upper right")


def _plain_log_labels():
    """The log axis's own labels (which ticks get one) written as plain numbers (0.5, 2, 1e-05):
    its default writes them as TeX powers, whose parser costs 0.3 s a picture."""
    from matplotlib.ticker import LogFormatter

    class PlainLog(LogFormatter):
        def _num_to_string(self, x, vmin, vmax):
            return f"{x:g}"

    return PlainLog(labelOnlyBase=False)


def plot_curves(frame: pd.DataFrame, curves: dict[str, tuple], path: Path, by: str = "variant") -> Path | None:
    """All loss curves (one colour per ``by`` value; diverged runs dashed with an x where they stopped)
    and the validation points; ``curves``: run_dir -> (training points, validation points), as
    ``reading.collect`` gives them."""
    import matplotlib  # here, not at the top: importing matplotlib costs a second the tables never need
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    readable = frame[frame["status"] != "unreadable"] if "status" in frame else frame
    if readable.empty:
        return None
    fig = Figure(figsize=FIGURE_INCHES, dpi=DPI)
    FigureCanvasAgg(fig)
    ax_train, ax_val = fig.subplots(1, 2)
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.12, top=0.9, wspace=0.25)
    groups = _groups(readable, curves, by, matplotlib.colormaps["tab10"])
    _draw_train(ax_train, groups)
    for group in groups:
        if len(group["val"]):
            ax_val.scatter(*group["val"].T, s=8, color=group["color"], alpha=0.6)
    ax_val.set(xlabel="update", ylabel="validation loss (fixed subset)", title="validation points")
    fig.savefig(path, dpi=DPI)
    return path


NOTHING_DRAWN = 3  # the drawing process's exit code when plot_curves had nothing to draw


def plot_curves_aside(
    frame: pd.DataFrame, curves: dict[str, tuple], path: Path, by: str = "variant"
) -> Callable[[], Path | None]:
    """``plot_curves`` started in a forked process, so that this one writes the tables meanwhile
    (matplotlib's import and the drawing take a second or two at 10,000 runs); the call returned
    waits for it and gives what ``plot_curves`` gives. Where forking is not safe (``fork_is_safe``),
    or the process fails (killed, out of memory, an error), the picture is drawn in this process
    when asked for: an error is then raised here as it is."""
    draw = partial(plot_curves, frame, curves, path, by)
    if not fork_is_safe():
        return draw
    try:
        process = multiprocessing.get_context("fork").Process(
            target=_draw_and_exit, args=(draw, os.getpid()), daemon=True
        )
        process.start()
    except Exception:  # no process left (a pids limit), or this one is a daemon: drawn here
        return draw

    def drawn() -> Path | None:
        try:
            fault_point("recap")
            process.join()
        except BaseException:  # a signal while waiting: no picture is left being written behind this process
            process.kill()
            process.join()
            raise
        if process.exitcode in (0, NOTHING_DRAWN):
            return path if process.exitcode == 0 else None
        return draw()

    return drawn


def _draw_and_exit(draw: Callable[[], Path | None], parent: int) -> None:
    reader_start(parent)  # no picture written behind a recap that was killed
    try:
        code = 0 if draw() is not None else NOTHING_DRAWN
    except BaseException:  # noqa: BLE001 - no traceback here: the recap's process draws again and says it
        code = 1
    sys.exit(code)
