"""schedule.json in the model folder: a model resumes only at the batch size it was trained with.

The course's learning rate decays once per epoch of examples / batch_size
steps, counted in global_step; check_schedule refuses a resume that would
jump it, and records each run's batch size and record count.
"""
import json
import os

from . import files
from .errors import DataError


SCHEDULE_FILE = "schedule.json"  # in the model folder: the batch size and epoch its checkpoints were trained with


def check_schedule(settings, examples, resumed_step=None):
    """Refuse to resume at another batch size than the model's; then record this run's in SCHEDULE_FILE.

    The learning rate decays once per epoch of examples / batch_size steps,
    counted in global_step, so resuming at another batch size would jump the
    schedule at once. resumed_step: the global_step of the checkpoint resumed from, or None
    for a fresh start (then nothing is compared). Raises DataError naming
    the model folder, the flag and both learning rates. A folder without
    the file (written by an earlier version) is not checked.
    """
    path = os.path.join(settings.model_dir, SCHEDULE_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            stored = json.load(f)
        trained = int(stored["batch_size"])
    except (OSError, ValueError, KeyError, TypeError):
        trained = None
    if resumed_step is not None and trained not in (None, settings.batch_size):
        before, after = (learning_rate_at(settings, examples, batch, resumed_step)
                         for batch in (trained, settings.batch_size))
        raise DataError(f"{settings.model_dir}: this model was trained at --batch-size {trained}; resuming at "
                        f"{settings.batch_size} would move its learning rate from {before:.3g} to {after:.3g} at "
                        f"once (the schedule decays once per epoch of steps); give --batch-size {trained}, or "
                        "another --model-dir for a new model")

    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"batch_size": settings.batch_size, "records": examples}, f)
            f.write("\n")
    files.write_atomically(path, write, what="the training schedule")


def learning_rate_at(settings, examples, batch_size, step):
    """The course's staircase learning rate at global_step `step` for this batch size (float)."""
    return settings.learning_rate_base * settings.learning_rate_decay ** (step // (examples / batch_size))
