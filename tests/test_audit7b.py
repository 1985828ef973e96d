"""The seventh audit of issue #53's §5-§9 and §11 kinds: cases of each kind the earlier tests did not hold.

TF Serving's REST API (§6): a gzip body followed by bytes that are not gzip is refused, not cut where the gzip ends;
a body of exactly the limit, plain or inflated, is taken, one byte more is 413; rows through the `inside` signature
are answered as each row alone, in their order; a body past LARGE_JSON (whose floats a Python function parses)
reads its decimals as the same float32 as a small one; `instances` and `inputs` together are refused; each served
model is matched by its own name and version; the [0, 1] check is on the float32 a value is read as; an input of
another name (b64) is refused. Clusters (§9): a probe of an address that never answers gives up after its time; a
worker names a silent chief beside a silent ps. Hints (§11): `model_lenet5/` is LeNet-5's folder. A decoding
process killed mid-generation is one error, not a wait for ever (§9). The app's input is the TFRecord reader's
values bit for bit (§8). Each test fails on a bug planted in the product (docs/tests.md, "Seventh audit: §5-§9").
"""
import gzip
import json

import numpy as np
import pytest

from test_server_faults import Recording, board_of, posted, rows_of
from mnistkit import layers
from mnistkit.board import table

GZIP = (b"content-encoding", b"gzip")


def instances(rows):
    return json.dumps({"instances": np.asarray(rows).tolist()}).encode()


@pytest.mark.quick
def test_a_gzip_body_followed_by_bytes_that_are_not_gzip_is_refused_not_cut_where_the_gzip_ends():
    recording = Recording()
    board, body = board_of(recording), instances(rows_of(2))
    for trailing in (b"garbage", b"\0" * 8, b"\n", b"{}"):
        answer = posted(board, gzip.compress(body) + trailing, [GZIP])
        assert answer.status == 400 and "gzip" in answer.error(), (trailing, answer.body)
    assert not recording.inputs
    assert posted(board, gzip.compress(body) + gzip.compress(b" "), [GZIP]).status == 200  # a second member


def padded_request(size):
    """A predict request of one row, padded with spaces (JSON's whitespace) to exactly `size` bytes."""
    body = instances(rows_of(1))
    return body[:-1] + b" " * (size - len(body)) + body[-1:]


@pytest.mark.quick
def test_a_body_of_exactly_the_limit_plain_or_inflated_is_taken_and_one_byte_more_is_413():
    recording = Recording()
    board = board_of(recording)
    exact, over = padded_request(table.MAX_BODY), padded_request(table.MAX_BODY + 1)
    assert len(exact) == table.MAX_BODY
    assert posted(board, exact).status == 200
    inflated = posted(board, gzip.compress(exact, 1), [GZIP])
    assert inflated.status == 200, inflated.body
    assert len(recording.inputs) == 2
    assert posted(board, over).status == 413
    refused = posted(board, gzip.compress(over, 1), [GZIP])
    assert refused.status == 413 and "once inflated" in refused.error()
    assert len(recording.inputs) == 2


class Layered(Recording):
    """A Recording whose `inside` answers two layers, each row's last bits depending on its batch's size."""
    network, source = Recording.network, Recording.source

    def __init__(self):
        super().__init__()
        self.inside = self
        self.layers = (layers.Layer("y1", "relu", (3,)), layers.Layer("y", "matmul", (2,)))

    def run(self, rows):
        self.inputs.append(rows.copy())
        extra = np.float32(len(rows)) * np.float32(1e-7)  # a batch of another size: other last bits
        first = rows[:, :3].astype(np.float32) / np.float32(7) + np.float32(0.1) + extra
        return self.predict(rows), [first, rows[:, 3:5].astype(np.float32) + np.float32(0.3) + extra]


@pytest.mark.quick
def test_the_inside_signature_answers_each_row_as_alone_and_keeps_the_rows_order():
    board, rows = board_of(Layered()), rows_of(5, seed=4)

    def asked(part, key="instances"):
        request = {"signature_name": "inside", key: np.asarray(part).tolist()}
        answer = posted(board, json.dumps(request).encode())
        assert answer.status == 200, answer.body
        return json.loads(answer.body)

    alone = [asked(rows[i:i + 1])["predictions"][0] for i in range(len(rows))]
    assert asked(rows)["predictions"] == alone
    assert asked(rows[::-1])["predictions"] == alone[::-1]
    columnar = asked(rows, "inputs")["outputs"]
    assert columnar == {name: [a[name] for a in alone] for name in ("y1", "y")}


@pytest.mark.quick
def test_a_large_body_reads_its_decimals_as_the_same_float32_as_a_small_one():
    values = ["0.96", "0.1", "0.3333333333333333", "1e-8", "0.123456789012345678", "0.50000001", "0.99999997"]
    row = (values * 112)[:784]
    text = "[" + ", ".join(row) + "]"
    count = table.LARGE_JSON // len(text) + 2  # past LARGE_JSON: its floats parsed by table.number_of
    body = ('{"instances": [%s]}' % ", ".join([text] * count)).encode()
    assert len(body) > table.LARGE_JSON
    recording = Recording()
    assert posted(board_of(recording), body).status == 200
    want = np.array([float(v) for v in row], np.float64).astype(np.float32)  # double, then float: TF Serving's
    got = np.concatenate(recording.inputs)
    assert got.shape == (count, 784)
    assert all(np.array_equal(r.view(np.uint32), want.view(np.uint32)) for r in got)


@pytest.mark.quick
def test_a_request_with_both_instances_and_inputs_or_neither_is_refused():
    recording = Recording()
    board, rows = board_of(recording), rows_of(1).tolist()
    for request in ({"instances": rows, "inputs": rows}, {"inputs": rows, "instances": rows},
                    {"instances": rows, "inputs": []}, {"signature_name": ""}, {}):
        answer = posted(board, json.dumps(request).encode())
        assert answer.status == 400 and 'either "instances" (row format) or "inputs"' in answer.error(), request
    assert not recording.inputs


@pytest.mark.quick
def test_each_served_model_is_matched_by_its_own_name_and_version():
    from mnistkit.board import app, model
    from mnistkit.networks import LENET5

    class Second(Recording):
        network, source = LENET5, "stand/mnist_lenet5_model-300"

    blank = lambda data, name: np.zeros((28, 28), np.uint8)  # noqa: E731
    first, second = model.Model(Recording(), blank), model.Model(Second(), blank)
    assert (first.name, first.version, second.name, second.version) == ("mnist", 7, "mnist_lenet5", 300)
    board = app.create_app(app.Served(first, compare=second))
    body = instances(rows_of(1))
    for name, own, other in (("mnist", 7, 300), ("mnist_lenet5", 300, 7)):
        for path in (f"/v1/models/{name}/versions/{own}:predict", f"/v1/models/{name}:predict"):
            assert posted(board, body, path=path).status == 200, path
        from test_board_routes import Asked
        status = json.loads(Asked(board, "GET", f"/v1/models/{name}/versions/{own}").body)
        assert status["model_version_status"][0]["version"] == str(own)
        for path in (f"/v1/models/{name}/versions/{other}:predict", f"/v1/models/{name}/versions/{other}"):
            method, got = ("POST", body) if path.endswith(":predict") else ("GET", b"")
            answer = Asked(board, method, path, got)
            assert answer.status == 404 and f"this server serves version {own}" in answer.error(), path


@pytest.mark.quick
def test_a_cluster_task_whose_address_never_answers_is_given_up_on_after_the_probe_time():
    import socket
    import threading
    from conftest import wait_limit
    from mnistkit import distributed
    with socket.socket() as task:
        task.bind(("127.0.0.1", 0))
        task.listen(0)  # accepts nothing: once its backlog is full, a connection's SYN goes unanswered
        address = "127.0.0.1:%d" % task.getsockname()[1]
        held = []
        try:
            for _ in range(4):
                held.append(socket.socket())
                held[-1].setblocking(False)
                held[-1].connect_ex(task.getsockname())
            answers = []
            probe = threading.Thread(target=lambda: answers.append(distributed.listening(address, wait=0.5)),
                                     daemon=True)
            probe.start()
            probe.join(wait_limit(30))  # the kernel's own connect retries last about two minutes
            assert not probe.is_alive(), f"distributed.listening({address!r}) still waiting"
            assert answers == [False]
        finally:
            for sock in held:
                sock.close()


@pytest.mark.quick
def test_a_worker_names_every_task_it_waits_for_that_never_started_the_chief_beside_the_parameter_servers():
    import socket
    from mnistkit import distributed
    from tf_compat import tf
    with socket.socket() as started, socket.socket() as ps_down, socket.socket() as chief_down:
        for sock in (started, ps_down, chief_down):
            sock.bind(("127.0.0.1", 0))  # bound: no other process takes the port meanwhile
        started.listen()
        up, ps, chief = ("127.0.0.1:%d" % s.getsockname()[1] for s in (started, ps_down, chief_down))
        cluster = tf.train.ClusterSpec({"ps": [up, ps], "worker": [chief, up]})
        assert distributed.silent_or(cluster, "them", is_chief=False) == (
            f"ps 1 ({ps}), the chief (worker 0, {chief}) never started (nothing listens there)")
        assert distributed.silent_or(cluster, "them", is_chief=True) == (
            f"ps 1 ({ps}) never started (nothing listens there)")


@pytest.mark.quick
@pytest.mark.parametrize("given", ["model_lenet5/", "./model_lenet5/", "model_lenet5//"])
def test_a_folder_named_with_a_trailing_slash_as_a_shell_completes_it_is_hinted_its_own_trainer(given, tmp_path):
    from conftest import run_main, shown
    from mnistkit import checkpoints
    from mnistkit.networks import LENET5
    (tmp_path / "model_lenet5").mkdir()
    assert checkpoints.trainer_of(str(tmp_path / given)) == LENET5.train_script
    assert checkpoints.network_of(str(tmp_path / given)) is LENET5
    result = run_main("mnist_export.py", "--model-dir", given, cwd=tmp_path)
    assert result.returncode == 1 and "train first with" in result.stderr, result.stderr
    assert f"{shown('mnist_lenet5_backward.py')}`" in result.stderr, result.stderr


def dying(*args):
    """An encode_images whose decoding process is killed (as the out-of-memory killer kills one)."""
    import os
    import signal
    os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.quick
@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGKILL"), reason="kills a process with SIGKILL")
def test_a_decoding_process_killed_mid_generation_is_one_error_not_a_wait_for_ever(monkeypatch):
    import threading
    from conftest import wait_limit
    from mnistkit import writer
    from mnistkit.errors import DataError
    monkeypatch.setattr(writer, "start_method", lambda: "fork")  # the child finds `dying` in this module
    monkeypatch.setattr(writer, "encode_images", dying)
    ended = []

    def generate():
        with writer.decoding_pool(2) as pool:
            try:
                list(writer.encoded_chunks(pool, 2, "images", [("a.jpg", 1, 1)] * 1200, None))
            except DataError as e:
                ended.append(str(e))

    thread = threading.Thread(target=generate, daemon=True)
    thread.start()
    thread.join(wait_limit(60))
    assert not thread.is_alive(), "the generator still waits for a chunk its killed process held"
    assert len(ended) == 1 and "a decoding process (pid " in ended[0] and "--workers 1" in ended[0], ended


@pytest.mark.quick
def test_the_range_is_checked_on_the_float32_a_value_is_read_as():
    for text, taken, value in (("1.00000001", True, 1.0), ("-1e-50", True, 0.0), ("1.0000001", False, None),
                               ("-1e-45", False, None)):  # float32 1.0, -0.0; 1.0000001 and -1.4e-45 stay outside
        recording = Recording()
        body = ('{"instances": [[%s]]}' % ", ".join([text] + ["0.5"] * 783)).encode()
        answer = posted(board_of(recording), body)
        if taken:
            assert answer.status == 200 and recording.inputs[0][0, 0] == value, (text, answer.body)
        else:
            assert answer.status == 400 and answer.error().startswith("images: row 0, column 0 is "), answer.body


def test_the_apps_input_is_the_tfrecord_readers_values_bit_for_bit():
    from mnistkit import preparation, records
    from tf_compat import tf
    levels = np.resize(np.arange(256, dtype=np.uint8), (28, 28))
    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
        reader = sess.run(records.to_float(tf.constant(levels.reshape(1, 784)), tf.constant([0]))[0])
    app = preparation.network_input(levels)
    assert app.dtype == np.float32 and np.array_equal(app.view(np.uint32), reader.view(np.uint32))


@pytest.mark.quick
def test_an_input_of_another_name_or_b64_is_refused_naming_the_signatures_input():
    import base64
    recording = Recording()
    board, row = board_of(recording), rows_of(1)[0]
    packed = base64.b64encode(row.tobytes()).decode()
    for request in ({"instances": [{"b64": row.tolist()}]}, {"instances": [{"b64": packed}]},
                    {"instances": [{"image": row.tolist()}]}, {"inputs": {"x": [row.tolist()]}},
                    {"inputs": {"b64": packed}}, {"instances": [{"images": row.tolist(), "b64": packed}]}):
        answer = posted(board, json.dumps(request).encode())
        assert answer.status == 400 and 'this signature takes one input, "images"' in answer.error(), request
    assert not recording.inputs
