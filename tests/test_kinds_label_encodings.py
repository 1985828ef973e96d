"""Label files in the encodings a Windows editor saves (issue #53 §7, more cases of its kind).

A label file saved as UTF-16 (Notepad's "Unicode", with or without its byte-order mark) or UTF-32 is refused on its
first line as such, not as a line whose label is a NUL; one saved as GBK is named as GBK, with its line as GBK reads
it; and a GBK line whose bytes also read as UTF-8 (图片 is CD BC C6 AC, which UTF-8 reads as 'ͼƬ') names the picture
GBK meant when that picture is there, instead of only "not found". Every refusal is one line naming the file and
the line, with exit 1 and nothing written. UTF-8, with or without its byte-order mark and CRLF, reads as before.
"""
import pytest

from mnistkit import writer
from test_errors import error_line, generate, make_layout

LINES = ["0_0.jpg 0", "图片 1.jpg 6", "2_2.jpg 2"]  # the bundled test digits 0, 6, 2


def layout_with(tmp_path, encoding, newline="\r\n"):
    """make_layout's folder with its second picture named 图片 1.jpg, its label file written in `encoding`."""
    image_dir, label_file, _ = make_layout(tmp_path, 3)
    (image_dir / "1_6.jpg").rename(image_dir / "图片 1.jpg")
    label_file.write_bytes((newline.join(LINES) + newline).encode(encoding))
    return image_dir, label_file


def nothing_written(tmp_path):
    out = tmp_path / "out"
    return not out.exists() or not any(out.iterdir())


@pytest.mark.quick
@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_a_utf16_label_file_is_named_as_utf16_on_its_first_line(tmp_path, capsys, encoding):
    image_dir, label_file = layout_with(tmp_path, encoding)
    assert generate(tmp_path, (image_dir, label_file)) == 1
    line = error_line(capsys)
    assert line.startswith(f"error: {label_file}:1: UTF-16 or UTF-32 text (Notepad's \"Unicode\"") and \
        line.endswith(writer.SAVE_AS_UTF8), line
    assert nothing_written(tmp_path)


@pytest.mark.quick
def test_a_gbk_label_file_is_named_as_gbk_with_its_line_as_gbk_reads_it(tmp_path, capsys):
    image_dir, label_file, _ = make_layout(tmp_path, 3)
    (image_dir / "1_6.jpg").rename(image_dir / "数字 1.jpg")  # 数字 in GBK (CA FD D7 D6) is no UTF-8
    label_file.write_bytes("\r\n".join(["0_0.jpg 0", "数字 1.jpg 6", "2_2.jpg 2"]).encode("gbk") + b"\r\n")
    assert generate(tmp_path, (image_dir, label_file)) == 1
    assert error_line(capsys) == (f"error: {label_file}:2: not UTF-8 text (invalid continuation byte at byte 0 of the "
                                  f"line); as GBK it reads '数字 1.jpg 6': {writer.SAVE_AS_UTF8}")
    assert nothing_written(tmp_path)


@pytest.mark.quick
def test_a_gbk_line_that_utf8_reads_as_other_characters_names_the_picture_gbk_meant(tmp_path, capsys):
    image_dir, label_file = layout_with(tmp_path, "gbk")
    assert "图片".encode("gbk").decode("utf-8") == "ͼƬ"  # valid UTF-8: read without a word before the fix
    assert generate(tmp_path, (image_dir, label_file)) == 1
    assert error_line(capsys) == (f"error: {label_file}:2: image 'ͼƬ 1.jpg' not found in {image_dir}; the file is GBK "
                                  f"text, in which the line names '图片 1.jpg', which is there: {writer.SAVE_AS_UTF8}")
    assert nothing_written(tmp_path)


@pytest.mark.quick
@pytest.mark.parametrize("encoding, newline", [("utf-8", "\n"), ("utf-8", "\r\n"), ("utf-8-sig", "\r\n")])
def test_a_utf8_label_file_with_or_without_its_mark_reads_as_before(tmp_path, encoding, newline):
    image_dir, label_file = layout_with(tmp_path, encoding, newline)
    assert writer.read_label_file(str(label_file)) == [("0_0.jpg", 0, 1), ("图片 1.jpg", 6, 2), ("2_2.jpg", 2, 3)]
    assert generate(tmp_path, (image_dir, label_file)) == 0
