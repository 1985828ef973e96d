"""The evaluation report: confusion matrix, per-digit precision and recall, the worst misclassified digits.

mnist_test.py --report / --report-json write it for each scored checkpoint:
report_numbers() computes the JSON-ready numbers, draw_report() the
matplotlib picture, write_report() writes either atomically.
"""
import os

import numpy as np

from . import cli, files
from .errors import DataError

REPORT_FILE = "report.png"  # written into --report when it names a folder
REPORT_WORST = 24  # misclassified digits listed in the report


def report_numbers(step, labels, probabilities, worst=REPORT_WORST):
    """The evaluation report's numbers, as a JSON-ready dict.

    labels: int [n] true digits; probabilities: float [n, 10], one row per
    record in file order. Returns global_step, records, correct, accuracy,
    confusion_matrix (10x10 counts, rows = true digit, columns = predicted),
    per_digit (precision, recall, support = true count, predicted = count
    predicted; precision or recall is None when undefined, e.g. a digit
    never predicted), and worst_misclassified: up to `worst` wrongly
    predicted records, most confident first, with index (record number in
    the file), true, predicted, confidence (probability of the predicted
    digit) and true_probability.
    """
    labels = np.asarray(labels, dtype=np.int64)
    predicted = np.argmax(probabilities, axis=1)
    classes = probabilities.shape[1]
    confusion = np.bincount(labels * classes + predicted, minlength=classes * classes).reshape(classes, classes)
    per_digit = []
    for d in range(classes):
        hits, support, called = int(confusion[d, d]), int(confusion[d].sum()), int(confusion[:, d].sum())
        per_digit.append({"digit": d, "precision": hits / called if called else None,
                          "recall": hits / support if support else None, "support": support, "predicted": called})
    confidence = probabilities[np.arange(len(labels)), predicted]
    wrong = np.flatnonzero(predicted != labels)
    wrong = wrong[np.argsort(-confidence[wrong], kind="stable")][:worst]
    correct = int(np.trace(confusion))
    return {
        "global_step": int(step), "records": len(labels), "correct": correct, "accuracy": correct / len(labels),
        "confusion_matrix": confusion.tolist(), "per_digit": per_digit,
        "worst_misclassified": [{"index": int(i), "true": int(labels[i]), "predicted": int(predicted[i]),
                                 "confidence": float(confidence[i]), "true_probability": float(probabilities[i, labels[i]])}
                                for i in wrong],
    }


def draw_report(numbers, pixels):
    """The report as a matplotlib Figure (Agg, no window): confusion matrix,
    precision/recall per digit, and the worst misclassified digits.

    numbers: from report_numbers; pixels: uint8 [n, 784] of the same records.
    """
    from matplotlib.figure import Figure  # imported here: only a report needs matplotlib
    from matplotlib.patches import Rectangle

    confusion = np.array(numbers["confusion_matrix"])
    classes = len(confusion)
    worst = numbers["worst_misclassified"]
    columns = 8
    rows = max(1, -(-len(worst) // columns))
    fig = Figure(figsize=(11, 6 + 1.45 * rows), layout="constrained")
    fig.suptitle(f"checkpoint at global_step {numbers['global_step']}: test accuracy {numbers['accuracy']:.4f} "
                 f"({numbers['correct']} of {numbers['records']} records)", fontsize=13, fontweight="bold")
    top, bottom = fig.subfigures(2, 1, height_ratios=[6, 1.45 * rows])
    ax_cm, ax_pr = top.subplots(1, 2, width_ratios=[1.25, 1])

    # Errors in red, scaled to the largest error, so the confusions stand out.
    errors = np.where(np.eye(classes, dtype=bool), 0, confusion)
    ax_cm.imshow(errors, cmap="Reds", vmin=0, vmax=max(1, errors.max()) * 1.25)
    for t in range(classes):
        ax_cm.add_patch(Rectangle((t - 0.5, t - 0.5), 1, 1, color="#d8efd8", zorder=0.5))  # the diagonal in green
        for p in range(classes):
            count = confusion[t, p]
            ax_cm.text(p, t, str(count), ha="center", va="center", fontsize=9,
                       fontweight="bold" if t == p else "normal", color="#b0b0b0" if count == 0 else "black")
    ax_cm.set(xticks=range(classes), yticks=range(classes), xlabel="predicted digit", ylabel="true digit",
              title="confusion matrix (counts)")
    ax_cm.tick_params(length=0)

    digits = np.arange(classes)
    precision = [d["precision"] or 0.0 for d in numbers["per_digit"]]
    recall = [d["recall"] or 0.0 for d in numbers["per_digit"]]
    ax_pr.barh(digits - 0.2, precision, height=0.4, color="#4c72b0", label="precision")
    ax_pr.barh(digits + 0.2, recall, height=0.4, color="#dd8452", label="recall")
    for d in numbers["per_digit"]:
        for offset, key in ((-0.2, "precision"), (0.2, "recall")):
            value = d[key]
            ax_pr.text(1.005, d["digit"] + offset, "n/a" if value is None else f"{value:.3f}", va="center", fontsize=8)
    low = min([v for v in precision + recall if v > 0] + [1.0])
    start = max(0.0, np.floor((low - 0.05) * 20) / 20)
    # The bars would differ by a few pixels from 0; a zoomed axis says where it starts and carries break marks.
    ax_pr.set(xlim=(start, 1.08), ylim=(classes - 0.5, -0.5), yticks=digits, ylabel="digit",
              xticks=np.arange(start, 1.0001, 0.05 if start >= 0.6 else 0.1),
              title="precision / recall per digit" + (f" (axis cut: starts at {start:.2f}, not 0)" if start else ""))
    if start:
        for dx in (-0.012, 0.012):  # the usual "//" of a broken axis, on the left end of the x axis
            ax_pr.plot([dx - 0.01, dx + 0.01], [-0.02, 0.02], transform=ax_pr.transAxes, color="black",
                       clip_on=False, linewidth=1)
    ax_pr.legend(loc="upper center", bbox_to_anchor=(0.5, -0.06), ncol=2, fontsize=9, frameon=False)

    bottom.suptitle("misclassified test digits the network was surest about (record #, true → predicted, confidence)",
                    fontsize=11)
    axes = bottom.subplots(rows, columns, squeeze=False)
    for ax in axes.flat:
        ax.set_axis_off()
    for ax, w in zip(axes.flat, worst):
        ax.imshow(pixels[w["index"]].reshape(28, 28), cmap="gray_r", vmin=0, vmax=255)
        ax.set_title(f"#{w['index']}: {w['true']} → {w['predicted']}\n{w['confidence']:.0%}", fontsize=9)
    return fig


def report_path(path):
    """--report's file: PATH itself when it ends in .png, else PATH/report.png. Raises DataError as
    images.png_or_folder does (`report.jpg`, an existing file that is not a .png)."""
    from .images import png_or_folder  # Pillow's plugins: only for a --report given
    return path if png_or_folder(path, "--report") == "file" else os.path.join(path, REPORT_FILE)


def check_json_path(path):
    """--report-json's file, checked before the work: raises DataError when `path` is a folder (the numbers were
    scored, then `cannot write report (Is a directory)`)."""
    if os.path.isdir(path):
        raise DataError(f"{path} is a folder, not a file: give --report-json a file name "
                        f"({os.path.join(path, 'report.json')})")
    return path


def write_report(numbers, pixels, png=None, json_path=None):
    """Write the report picture (png) and/or its numbers (json_path); returns the paths written."""
    written = []
    if png is not None:
        fig = draw_report(numbers, pixels)
        files.write_atomically(png, lambda tmp: fig.savefig(tmp, format="png", dpi=80))
        written.append(png)
    if json_path is not None:
        files.write_atomically(json_path, files.text_writer(cli.readable_json(numbers, "utf-8", indent=1) + "\n"))
        written.append(json_path)
    return written
