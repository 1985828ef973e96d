"""The app: both preparations of a picture, its output formats, and hand-made photos of digits."""
import json
import os
import select
import subprocess
import sys
import time
import types

import numpy as np
import pytest
from PIL import Image

from conftest import ROOT, run_main, wait_limit
import handmade
import mnist_app
import mnistkit.idx
import mnistkit.pictures
import mnistkit.segmentation


def digit_picture(pixels, mode):
    """A test digit as a user's picture: dark ink on white paper, enlarged to 140x140, in `mode`."""
    img = Image.fromarray(255 - pixels, mode="L").resize((140, 140), Image.Resampling.BICUBIC)
    if mode == "RGBA":  # transparent background, dark ink
        rgba = Image.new("RGBA", img.size, (0, 0, 0, 0))
        rgba.putalpha(Image.fromarray(255 - np.asarray(img)))
        return rgba
    return img.convert(mode)


def centre_of_mass(pixels):
    rows, cols = np.indices(pixels.shape)
    mass = pixels.astype(np.float64).sum()
    return (rows * pixels).sum() / mass, (cols * pixels).sum() / mass


def ink_box(pixels, faint=16):
    """Height and width of the box around the pixels of `faint` levels or more: an edge's half pixel counts as a
    cell of ink (preparation.CELL_FULL) and may add a row of a few levels beyond MNIST's 20 pixels."""
    rows, cols = np.nonzero(pixels >= faint)
    return rows.max() - rows.min() + 1, cols.max() - cols.min() + 1


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    """The hand-made photos (tests/handmade.py): [(path, digit, style)]."""
    return handmade.make_photos(str(tmp_path_factory.mktemp("handmade")))


@pytest.fixture(scope="module")
def model_dir(trained_workdir):
    return str(trained_workdir / "model")


# ---------------------------------------------------------------- preparation

def test_otsu_threshold_separates_paper_from_ink_and_maximises_between_class_variance():
    rng = np.random.default_rng(0)
    paper = rng.normal(200, 8, 9000)
    ink = rng.normal(45, 12, 1000)
    values = np.clip(np.round(np.concatenate([paper, ink])), 0, 255).astype(np.uint8)
    t = mnistkit.segmentation.otsu_threshold(values)
    assert ink.max() < t <= paper.min()

    # The same threshold by brute force over the definition.
    def between(t):
        low, high = values[values < t].astype(float), values[values >= t].astype(float)
        return len(low) * len(high) * (low.mean() - high.mean()) ** 2 if len(low) and len(high) else 0
    scores = [between(c) for c in range(1, 256)]
    assert between(t) == pytest.approx(max(scores))


def test_mnist_input_crops_scales_and_centres_like_mnist(photos):
    for path, digit, style in photos[::3]:
        pixels = mnist_app.prepared_pixels(path)
        assert pixels.shape == (28, 28) and pixels.dtype == np.uint8
        height, width = ink_box(pixels)
        assert max(height, width) in (19, 20, 21) and min(height, width) >= 3, (style, digit, height, width)
        row, col = centre_of_mass(pixels)
        assert abs(row - 14) <= 1 and abs(col - 14) <= 1, (style, digit, row, col)
        assert pixels.max() == 255  # strokes as thick as MNIST's saturate


def test_mnist_input_does_not_depend_on_paper_light_or_place(tmp_path):
    ink = handmade.draw_digit(3, 180, 0.08, seed=1)
    pictures = {
        "white": handmade.photo(ink, (300, 300), (60, 60), 245, 20),
        "dark paper, off-centre": handmade.photo(ink, (400, 500), (10, 300), 110, 30, noise=3),
        "shadow": handmade.photo(ink, (300, 400), (60, 200), 250, 25, gradient=0.7, noise=4),
        "pencil": handmade.photo(ink, (300, 300), (100, 20), 235, 150, noise=3),
    }
    inputs = {}
    for name, array in pictures.items():
        Image.fromarray(array).save(tmp_path / "p.png")
        inputs[name] = mnist_app.prepared_pixels(str(tmp_path / "p.png")) > 127
    reference = inputs.pop("white")
    for name, strokes in inputs.items():
        overlap = (strokes & reference).sum() / (strokes | reference).sum()
        assert overlap > 0.75, name
    # The course's fixed threshold sees a grey page as all ink: a flat input, refused rather than guessed.
    Image.fromarray(pictures["dark paper, off-centre"]).save(tmp_path / "dark.png")
    assert (mnist_app.course_pixels(Image.open(tmp_path / "dark.png").convert("L")) == 255).all()
    with pytest.raises(mnistkit.idx.DataError) as error:
        mnist_app.prepared_pixels(str(tmp_path / "dark.png"), preprocess="course")
    assert str(error.value) == (f"{tmp_path / 'dark.png'}: no digit found: every pixel of the 28x28 input is 255 "
                                "after the course's --threshold 50; try --preprocess mnist or another --threshold")


def test_exif_orientation_and_white_on_black_give_the_upright_dark_on_light_input(tmp_path):
    array = handmade.photo(handmade.draw_digit(7, 200, 0.08, seed=3), (300, 400), (50, 60), 240, 30)
    Image.fromarray(array).save(tmp_path / "upright.png")
    handmade.exif_rotated_jpeg(array, str(tmp_path / "sideways.jpg"), blur=0)
    Image.fromarray(255 - array).save(tmp_path / "negative.png")
    assert Image.open(tmp_path / "sideways.jpg").size == (300, 400)  # stored sideways
    upright = mnist_app.prepared_pixels(str(tmp_path / "upright.png")).astype(int)
    assert np.abs(mnist_app.prepared_pixels(str(tmp_path / "sideways.jpg")) - upright).mean() < 8
    assert np.array_equal(mnist_app.prepared_pixels(str(tmp_path / "negative.png")), upright)


def test_blank_picture_is_reported_not_guessed(tmp_path, model_dir):
    images, labels = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")
    Image.new("L", (200, 200), 230).save(tmp_path / "blank.png")
    digit_picture(images[0], "L").save(tmp_path / "digit.png")
    result = run_main("mnist_app.py", "--model-dir", model_dir, "blank.png", "digit.png", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("error: blank.png: no digit found")
    assert result.stdout.startswith(f"digit.png: The prediction number is: {labels[0]}")


# ---------------------------------------------------------------- command line

@pytest.mark.parametrize("mode", ["L", "RGB", "RGBA", "P"])
def test_app_predicts_sample_digits_saved_as_png(model_dir, tmp_path, mode):
    images, labels = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")
    paths = []
    for i in range(20):
        path = tmp_path / f"digit{i}.png"
        digit_picture(images[i], mode).save(path)
        paths.append(str(path))
    result = run_main("mnist_app.py", "--model-dir", model_dir, "--json", *paths, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    predicted = [entry["prediction"] for entry in json.loads(result.stdout)]
    assert len(predicted) == 20
    # 20 fresh models read 18 or 19 of these 20 in every mode (pictures 9 and 12 are
    # the misread ones; the next least sure, 6 and 18, got p 0.84 to 0.95 for their digit in the
    # 3 logged): 17 leaves one picture of margin. An app that always answers 0 reads 4.
    assert (np.array(predicted) == labels[:20]).sum() >= 17


def read_until(proc, marker, seen, timeout=120):
    """Read the app's stdout (bytes) into `seen` until `marker` appears after what was seen before; fail after
    wait_limit(timeout) s."""
    timeout = wait_limit(timeout)
    start, deadline = len(seen), time.monotonic() + timeout
    while marker not in seen[start:]:
        ready, _, _ = select.select([proc.stdout], [], [], max(0, deadline - time.monotonic()))
        chunk = os.read(proc.stdout.fileno(), 4096) if ready else b""
        assert chunk, f"no {marker!r} within {timeout:.0f} s (or end of output); stdout so far: {bytes(seen)!r}"
        seen += chunk


def test_course_prompts_print_each_prediction_before_the_next_prompt(model_dir, tmp_path):
    images, labels = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")
    digit_picture(images[0], "L").save(tmp_path / "one.png")
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "mnist_app.py"), "--model-dir", model_dir],
                            cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        seen = bytearray()
        read_until(proc, mnist_app.COUNT_PROMPT.encode(), seen)
        proc.stdin.write(b"2\n")
        proc.stdin.flush()
        read_until(proc, mnist_app.PATH_PROMPT.encode(), seen)
        proc.stdin.write(b"one.png\n")  # the second path is not typed yet: the prediction must come now
        proc.stdin.flush()
        read_until(proc, mnist_app.PATH_PROMPT.encode(), seen)
        proc.stdin.close()  # Ctrl-D at the second prompt
        rest, stderr = proc.stdout.read(), proc.stderr.read()
        status = proc.wait(timeout=wait_limit(60))
    finally:
        proc.kill()
    stdout = (bytes(seen) + rest).decode()
    assert stdout.startswith(f"{mnist_app.COUNT_PROMPT}{mnist_app.PATH_PROMPT}"
                             f"The prediction number is: {labels[0]} (top 3: {labels[0]} ")
    assert stdout.endswith(f")\n{mnist_app.PATH_PROMPT}\n")  # the prompt's line is ended
    assert stderr.decode() == "end of input: 1 of 2 test pictures given\n"
    assert status == 0  # every picture given was read


def test_course_prompts_go_on_after_a_bad_path_and_stop_at_end_of_input(model_dir, tmp_path):
    images, labels = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")
    digit_picture(images[0], "L").save(tmp_path / "one.png")
    digit_picture(images[1], "L").save(tmp_path / "two.png")
    result = run_main("mnist_app.py", "--model-dir", model_dir, cwd=tmp_path,
                      input="3\n missing.png \ntwo.png\none.png\n")
    assert result.returncode == 1  # one picture failed
    assert result.stderr == "error: missing.png: file not found\n"
    assert result.stdout.count(mnist_app.PATH_PROMPT) == 3
    predictions = [line.split(": ")[-1] for line in result.stdout.split(mnist_app.PATH_PROMPT)[2:]]
    assert [p.split()[0] for p in predictions] == [str(labels[1]), str(labels[0])]

    # End of input after a failed picture: exit 1; at the first prompt: nothing given, exit 0.
    result = run_main("mnist_app.py", "--model-dir", model_dir, cwd=tmp_path, input="2\nmissing.png\n")
    assert result.returncode == 1
    assert result.stderr == "error: missing.png: file not found\nend of input: 1 of 2 test pictures given\n"
    result = run_main("mnist_app.py", "--model-dir", model_dir, cwd=tmp_path, input="")
    assert (result.returncode, result.stdout, result.stderr) == (
        0, f"{mnist_app.COUNT_PROMPT}\n", "end of input: no pictures to read\n")
    # A wrong count is said and asked again, as a wrong path is; then end of input at the path prompt.
    result = run_main("mnist_app.py", "--model-dir", model_dir, cwd=tmp_path, input="two\n-1\n\n1\n")
    assert (result.returncode, result.stdout.count(mnist_app.COUNT_PROMPT)) == (0, 4)
    assert result.stderr == ("error: the number of test pictures must be a whole number, not 'two'\n"
                             "error: the number of test pictures must be 0 or more, not '-1'\n"
                             "error: the number of test pictures must be a whole number, not ''\n"
                             "end of input: 0 of 1 test pictures given\n")
    # An answer of 0 ends with a line that says so, exit 0.
    result = run_main("mnist_app.py", "--model-dir", model_dir, cwd=tmp_path, input="0\n")
    assert (result.returncode, result.stdout, result.stderr) == (
        0, mnist_app.COUNT_PROMPT, "0 test pictures: nothing to predict\n")


def test_at_a_terminal_wrong_paths_of_each_kind_leave_the_session_going(model_dir, tmp_path):
    # A user said a wrong path ended the session (exit 1, the other pictures lost). At a terminal (a pty, so
    # input() reads as it does for a person), each wrong path gets its line and the next prompt; the pictures after
    # it are read; exit status 1 at the end only says that one failed.
    import pty
    images, labels = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")
    digit_picture(images[0], "L").save(tmp_path / "good.png")
    (tmp_path / "folder").mkdir()
    (tmp_path / "text.png").write_text("not a picture")
    (tmp_path / "cut.png").write_bytes((tmp_path / "good.png").read_bytes()[:100])
    wrong = ["nothere.png", "folder", "text.png", "cut.png", ""]
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "mnist_app.py"), "--model-dir", model_dir],
                            cwd=tmp_path, stdin=child, stdout=child, stderr=child)
    os.close(child)
    reader = types.SimpleNamespace(stdout=types.SimpleNamespace(fileno=lambda: main))
    try:
        seen = bytearray()
        read_until(reader, mnist_app.COUNT_PROMPT.encode(), seen)
        os.write(main, f"{len(wrong) + 1}\n".encode())
        for answer in wrong + ["good.png"]:
            read_until(reader, mnist_app.PATH_PROMPT.encode(), seen)
            os.write(main, answer.encode() + b"\n")
        read_until(reader, b"The prediction number is: ", seen)
        status = proc.wait(timeout=wait_limit(60))
        while True:  # the rest the app wrote, to its end: a pty whose other side has closed reads EIO
            try:
                chunk = os.read(main, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        proc.kill()
        os.close(main)
    text = bytes(seen).decode().replace("\r\n", "\n")
    assert status == 1  # one picture or more failed, said at the end, not by ending early
    assert text.count(mnist_app.PATH_PROMPT) == len(wrong) + 1, text
    for answer in ("nothere.png", "folder", "text.png", "cut.png", "(empty answer)"):
        assert f"error: {answer}: " in text, text
    assert f"The prediction number is: {labels[0]} " in text, text


@pytest.mark.long
def test_course_prompts_take_a_path_as_a_file_manager_gives_it(model_dir, tmp_path):
    """Dragged in from a file manager: quoted, spaces after it; ~ for the home folder, as a shell reads it."""
    images, labels = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")
    (tmp_path / "home").mkdir()
    digit_picture(images[0], "L").save(tmp_path / "my six.png")
    digit_picture(images[1], "L").save(tmp_path / "home" / "two.png")
    answers = " 4 \t\n'my six.png'  \n\"my six.png\"\t\n  ~/two.png \n'no such.png' \n"
    result = subprocess.run([sys.executable, os.path.join(ROOT, "mnist_app.py"), "--model-dir", model_dir],
                            cwd=tmp_path, input=answers, capture_output=True, text=True, timeout=wait_limit(600),
                            env=dict(os.environ, HOME=str(tmp_path / "home")))
    assert result.returncode == 1  # one picture failed
    assert result.stderr == "error: no such.png: file not found\n"
    first, *answered = result.stdout.split(mnist_app.PATH_PROMPT)
    assert first == mnist_app.COUNT_PROMPT
    assert [line.split(" (top 3: ")[0] for line in answered] == [
        f"The prediction number is: {labels[0]}", f"The prediction number is: {labels[0]}",
        f"The prediction number is: {labels[1]}", ""]


def test_app_says_several_digits_and_specks_in_one_line_each_and_reads_the_phone_photo(model_dir, tmp_path):
    images, labels = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")
    for name, digits, layout, gap in (("123.png", [1, 2, 3], "row", 0.3), ("stacked.png", [3, 8], "stack", 0.5)):
        ink = handmade.several_digits(digits, 160, 0.08, gap, layout)
        frame = (ink.shape[0] + 80, ink.shape[1] + 80)
        Image.fromarray(handmade.photo(ink, frame, (40, 40), 240, 30)).save(tmp_path / name)
    Image.fromarray(handmade.photo(handmade.specks((480, 640), 6, (2, 5), seed=3), (480, 640), (0, 0), 235, 40,
                                   noise=3)).save(tmp_path / "dirt.png")
    four = handmade.phone_shot(handmade.draw_digit(4, 300, 14 / 300, seed=4), (480, 640), (90, 170),
                               (235, 105, "left"), 20, 1.5, 7, seed=4)
    Image.fromarray(four).save(tmp_path / "four.jpg", quality=85)
    digit_picture(images[0], "L").save(tmp_path / "digit.png")
    result = run_main("mnist_app.py", "--model-dir", model_dir, "123.png", "stacked.png", "dirt.png", "four.jpg",
                      "digit.png", cwd=tmp_path)
    assert result.returncode == 1
    crop = "the app reads one digit per picture: crop to one digit"
    assert result.stderr.splitlines() == [
        f"error: 123.png: several digits found (3 side by side); {crop}",
        f"error: stacked.png: several digits found (2 one above the other); {crop}",
        "error: dirt.png: no digit found: only specks, no mark large enough to be a digit; "
        "the app expects a dark digit on lighter paper"]
    assert [line.split(" (top 3: ")[0] for line in result.stdout.splitlines()] == [
        "four.jpg: The prediction number is: 4", f"digit.png: The prediction number is: {labels[0]}"]


def test_json_gives_top3_sorted_and_folder_mode_lists_every_picture(model_dir, tmp_path):
    images, labels = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")
    folder = tmp_path / "photos"
    (folder / "sub").mkdir(parents=True)
    names = {"a.png": "PNG", "b.JPG": "JPEG", "c.bmp": "BMP", "d.jpeg": "JPEG", "e.tif": "TIFF"}
    for i, (name, kind) in enumerate(names.items()):
        digit_picture(images[i], "L").save(folder / name, format=kind)
    digit_picture(images[9], "L").save(folder / "sub" / "deeper.png")
    digit_picture(images[9], "L").save(folder / ".hidden.png")
    (folder / "notes.txt").write_text("not a picture")
    result = run_main("mnist_app.py", "--model-dir", model_dir, "--json", "photos", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    entries = json.loads(result.stdout)
    assert [e["file"] for e in entries] == [os.path.join("photos", n) for n in sorted(names)]
    for entry in entries:
        top = entry["top3"]
        probabilities = [t["probability"] for t in top]
        assert len(top) == 3 and len({t["digit"] for t in top}) == 3
        assert probabilities == sorted(probabilities, reverse=True)
        assert 0 < sum(probabilities) <= 1 + 1e-6
        assert entry["prediction"] == top[0]["digit"]
        assert entry["network"] == "784-500-10"
    # All five: 25 fresh models (20 of this network, 5 without its hidden layer) read
    # all five right; the least sure, picture 2, got p >= 0.9 for its digit in the 8 logged.
    assert [e["prediction"] for e in entries] == labels[:5].tolist()


def test_show_input_writes_exactly_what_the_network_got(model_dir, tmp_path, photos):
    path = photos[15][0]  # a thin pen stroke, off-centre
    result = run_main("mnist_app.py", "--model-dir", model_dir, "--show-input", "seen.png", path, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "input written to seen.png\n"
    seen = Image.open(tmp_path / "seen.png")
    assert seen.size == (28, 28) and seen.mode == "L"
    network_input = mnist_app.pre_pic(path)
    np.testing.assert_array_equal(np.asarray(seen).reshape(1, 784).astype(np.float32) * np.float32(1.0 / 255),
                                  network_input)  # as the TFRecord reader scales the generator's pixels

    # Several pictures: one file per picture in a folder; the course's preparation too.
    pair = [photos[0][0], photos[1][0]]
    result = run_main("mnist_app.py", "--model-dir", model_dir, "--preprocess", "course",
                      "--show-input", "seen", *pair, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    stems = [os.path.splitext(os.path.basename(picture))[0] for picture in pair]
    assert result.stderr == "".join(f"input written to {os.path.join('seen', stem)}.png\n" for stem in stems)
    for picture in pair:
        stem = os.path.splitext(os.path.basename(picture))[0]
        written = np.asarray(Image.open(tmp_path / "seen" / (stem + ".png")))
        assert np.array_equal(written, mnist_app.prepared_pixels(picture, preprocess="course"))
        assert set(np.unique(written)) <= {0, 255}  # the course's fixed threshold: black and white only
    assert sorted(os.listdir(tmp_path / "seen")) == sorted(os.path.splitext(os.path.basename(p))[0] + ".png"
                                                           for p in pair)
    with pytest.raises(mnistkit.idx.DataError, match="takes one picture"):
        mnistkit.pictures.input_path("one.png", pair[0], len(pair))


def test_show_input_keeps_the_stem_and_never_overwrites_another_pictures_input(model_dir, tmp_path):
    images, _ = mnistkit.idx.read_idx_split(mnistkit.idx.BUNDLED_DIR, "test")
    digit_picture(images[0], "L").save(tmp_path / "a.png")
    digit_picture(images[1], "L").convert("RGB").save(tmp_path / "a.jpg")
    result = run_main("mnist_app.py", "--model-dir", model_dir, "--show-input", "seen", "--json", "a.jpg",
                      cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == f"input written to {os.path.join('seen', 'a.png')}\n"
    assert [entry["file"] for entry in json.loads(result.stdout)] == ["a.jpg"]  # stdout stays JSON
    assert os.listdir(tmp_path / "seen") == ["a.png"]
    first = (tmp_path / "seen" / "a.png").read_bytes()

    # Same stem twice on the command line: refused before any work, the earlier file kept.
    result = run_main("mnist_app.py", "--model-dir", model_dir, "--show-input", "seen", "a.jpg", "a.png",
                      cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (f"error: {os.path.join('seen', 'a.png')}: --show-input already wrote a.jpg's input "
                             "there; a.png has the same name stem (rename one, or run the app for each)\n")
    assert (tmp_path / "seen" / "a.png").read_bytes() == first

    # At the course's prompts the second one gets the error line, the first keeps its file.
    result = run_main("mnist_app.py", "--model-dir", model_dir, "--show-input", "seen", cwd=tmp_path,
                      input="2\na.jpg\na.png\n")
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == f"input written to {os.path.join('seen', 'a.png')}"
    assert result.stderr.splitlines()[1].startswith(f"error: {os.path.join('seen', 'a.png')}: --show-input already "
                                                    "wrote a.jpg's")
    assert (tmp_path / "seen" / "a.png").read_bytes() == first


# ---------------------------------------------------------------- hand-made photos

def network_input_or_none(path, preprocess):
    """pre_pic's float32 [1, 784], or None when the app refuses the picture."""
    try:
        return mnist_app.pre_pic(path, preprocess=preprocess)
    except mnistkit.idx.DataError:
        return None


@pytest.mark.long
def test_hand_made_photos_are_read_better_than_with_the_course_threshold(model_dir, photos, summary_line):
    predictor = mnist_app.Predictor(model_dir)
    right = {}
    for preprocess in mnist_app.PREPROCESS:
        read = [(pixels, digit) for pixels, digit in ((network_input_or_none(p, preprocess), d) for p, d, _ in photos)
                if pixels is not None]
        predicted = predictor.predict(np.concatenate([pixels for pixels, _ in read])).argmax(axis=1)
        right[preprocess] = int((predicted == [digit for _, digit in read]).sum())
        refused = len(photos) - len(read)
        assert refused == (0 if preprocess == "mnist" else 20)  # the grey and dark papers: flat in the course's
    summary_line(f"hand-made photos read right: mnist {right['mnist']}, course {right['course']} of {len(photos)}")
    # 40 fresh models: 104 to 108 of 110; the lower mean of two sets of 20, 105.9 (sd 1.0), is
    # 3.8 sd above 102; the course's preparation reads 30 to 37 (its 20 flat inputs refused).
    assert right["mnist"] >= 102
    assert right["mnist"] >= right["course"] + 0.4 * len(photos)
