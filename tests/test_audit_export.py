"""An export's commit on a file system without hard links (issue 53 §4, the audit): FAT, exFAT (a USB stick) and
some network shares refuse os.link; the earlier .tflite files are then kept aside by a copy, so the export is made,
or (a rename failing after) taken back whole, as on any other disk. Quick: staged files, no TensorFlow."""
import os

import pytest

from test_kinds_export import staged, state
from mnistkit import export


@pytest.mark.quick
@pytest.mark.parametrize("failing", [None, "mnist_int8.tflite"], ids=["committed", "a-rename-fails-after"])
def test_a_commit_on_a_file_system_without_hard_links_keeps_the_earlier_files_by_a_copy(tmp_path, monkeypatch,
                                                                                        failing):
    export_dir, staging = staged(tmp_path, "new")
    for suffix in ("", "_int8"):
        (export_dir / f"mnist{suffix}.tflite").write_text(f"earlier{suffix}")
    linked = []

    def no_links(source, target, *args, **kwargs):
        linked.append(target)
        raise PermissionError(1, "Operation not permitted", source)
    monkeypatch.setattr(os, "link", no_links)
    if failing is None:
        written = export.commit(str(staging), str(export_dir), "mnist")
        assert written.saved_model == str(export_dir / "mnist" / "2") and linked
        assert state(export_dir)["mnist.tflite"] == "new" and state(export_dir)["mnist_int8.tflite"] == "new_int8"
        return
    (export_dir / failing).unlink()
    (export_dir / failing).mkdir()  # a folder in the way: the rename over it fails
    (export_dir / failing / "keep").write_text("not ours")
    before = state(export_dir)
    with pytest.raises(OSError):
        export.commit(str(staging), str(export_dir), "mnist")
    assert state(export_dir) == before  # mnist.tflite the earlier one again (from its copy), no version 2
