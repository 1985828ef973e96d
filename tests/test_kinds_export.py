"""More cases of "every file of an export is committed inside its lock, all or nothing" (issue #53 §4).

When the second .tflite rename of a commit fails (its name taken by a folder, a permission), the new SavedModel
version was taken back out but the first .tflite stayed the new export's, beside an older newest version: the
two files of the folder mixed versions. Now the first is put back as it was (or removed when there was none).
"""
import os

import pytest

from mnistkit import export, folders


def staged(tmp_path, text):
    """An export folder holding version 1 (the earlier export) and a staging folder of the next export's files."""
    export_dir = tmp_path / "export"
    (export_dir / "mnist" / "1").mkdir(parents=True)
    (export_dir / "mnist" / "1" / "saved_model.pb").write_text("earlier")
    staging = export_dir / ".staging"
    (staging / "saved_model").mkdir(parents=True)
    (staging / "saved_model" / "saved_model.pb").write_text(text)
    for suffix in ("", "_int8"):
        (staging / f"mnist{suffix}.tflite").write_text(f"{text}{suffix}")
    return export_dir, staging


def state(export_dir):
    """{path: text} of every file of the export folder but its staging, and its lock."""
    found = {}
    for top, dirs, names in os.walk(export_dir):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            path = os.path.join(top, name)
            found[os.path.relpath(path, export_dir)] = open(path, encoding="utf-8").read()
    return found


@pytest.mark.quick
@pytest.mark.parametrize("earlier", [True, False], ids=["over-an-earlier-export", "the-first-tflite"])
@pytest.mark.parametrize("failing", ["mnist.tflite", "mnist_int8.tflite"])
def test_a_tflite_rename_that_fails_leaves_the_export_folder_as_it_was(tmp_path, earlier, failing):
    export_dir, staging = staged(tmp_path, "new")
    if earlier:
        for suffix in ("", "_int8"):
            (export_dir / f"mnist{suffix}.tflite").write_text(f"earlier{suffix}")
    (export_dir / failing).unlink(missing_ok=True)
    (export_dir / failing).mkdir()  # a folder in the way: the rename over it fails
    (export_dir / failing / "keep").write_text("not ours")
    before = state(export_dir)
    with pytest.raises(OSError):
        export.commit(str(staging), str(export_dir), "mnist")
    assert state(export_dir) == before  # no version 2, no .tflite of this export beside version 1
    assert not (export_dir / folders.LOCK_FILE).exists()


@pytest.mark.quick
def test_a_commit_that_succeeds_replaces_both_and_keeps_no_copy_of_the_earlier_ones(tmp_path):
    export_dir, staging = staged(tmp_path, "new")
    for suffix in ("", "_int8"):
        (export_dir / f"mnist{suffix}.tflite").write_text(f"earlier{suffix}")
    written = export.commit(str(staging), str(export_dir), "mnist")
    assert written.saved_model == str(export_dir / "mnist" / "2")
    assert state(export_dir) == {os.path.join("mnist", "1", "saved_model.pb"): "earlier",
                                 os.path.join("mnist", "2", "saved_model.pb"): "new",
                                 "mnist.tflite": "new", "mnist_int8.tflite": "new_int8"}
