"""More cases of the TF Serving REST API's kinds of fault (issue #53 §6), beyond test_server_faults.py's one each.

A value of a request's images that is not a JSON number (true, false, null) beside numbers is refused naming its
row and column, as TF Serving refuses a non-number for a DT_FLOAT input; an integer past int64 is a number past
the range, not "objects"; a signature_name that is not a string is refused, not taken for the default. A header
sent twice is one value (RFC 9110): Content-Encoding gzip twice is not inflated once, two Host lines name no host.
A gzip body inflating past the limit in small chunks, its body undeclared, is 413; a gzip body on the board's own
JSON route is read as the plain one.
"""
import gzip
import json
import zlib

import numpy as np
import pytest

from test_board_routes import OWN_HOST, Asked, served  # noqa: F401
from test_server_faults import PREDICT, Recording, board_of, posted, rows_of
from mnistkit.board import app, table

GZIP = (b"content-encoding", b"gzip")


def instances(*rows):
    return json.dumps({"instances": [list(row) for row in rows]}).encode()


@pytest.mark.quick
@pytest.mark.parametrize("value, named", [(True, "true"), (False, "false"), (None, "null"), ("0.5", '"0.5"')])
@pytest.mark.parametrize("layout", ["instances", "inputs", "named"])
def test_a_value_that_is_not_a_number_beside_numbers_is_refused_naming_its_row_and_column(value, named, layout):
    recording = Recording()
    board, rows = board_of(recording), rows_of(3, seed=1).tolist()
    rows[2][5] = value
    request = {"instances": {"instances": rows}, "inputs": {"inputs": rows},
               "named": {"instances": [{"images": row} for row in rows]}}[layout]
    answer = posted(board, json.dumps(request).encode())
    assert answer.status == 400 and not recording.inputs, (layout, answer.body)
    if value is not None and not isinstance(value, str):  # NumPy read true as 1 beside numbers: the row is named
        assert answer.error().startswith(f"images: row 2, column 5 is {named}, not a number (DT_FLOAT)"), answer.body


@pytest.mark.quick
@pytest.mark.parametrize("text, said", [("1" + "0" * 30, "1e+30, outside [0, 1]"),
                                        ("-" + "9" * 25, "-1e+25, outside [0, 1]"),
                                        ("1" + "0" * 400, "Infinity, not a finite number")])
def test_an_integer_past_int64_is_a_number_out_of_range_not_an_object(text, said):
    for rest in ("0", "0.5"):  # beside integers, and beside decimals
        body = ('{"instances": [[%s]]}' % ", ".join([rest] * 100 + [text] + [rest] * 683)).encode()
        answer = posted(board_of(Recording()), body)
        assert answer.status == 400 and answer.error().startswith(f"images: row 0, column 100 is {said}"), answer.body


@pytest.mark.quick
@pytest.mark.parametrize("name", [0, False, [], {}, None, 1.5])
def test_a_signature_name_that_is_not_a_string_is_refused_not_taken_for_the_default(name):
    recording = Recording()
    answer = posted(board_of(recording), json.dumps({"instances": rows_of(1).tolist(), "signature_name": name}
                                                    ).encode())
    assert answer.status == 400 and '"signature_name" is' in answer.error() and not recording.inputs, answer.body
    for default in ("", "serving_default"):  # what stands for the default still does
        ok = posted(board_of(Recording()), json.dumps({"instances": rows_of(1).tolist(), "signature_name": default}
                                                      ).encode())
        assert ok.status == 200


@pytest.mark.quick
def test_numbers_json_writes_otherwise_are_read_as_the_same_float32():
    recording = Recording()
    board = board_of(recording)
    forms = ["1e-3", "1E-3", "0.001", "1.0e-3", "10e-4", "-0.0", "0", "-0", "1", "1.0", "1e0", "0.96", "96e-2"]
    text = "[" + ", ".join((forms * 61)[:784]) + "]"
    assert posted(board, ('{"instances": [%s]}' % text).encode()).status == 200
    want = np.array([float(v) for v in (forms * 61)[:784]], np.float64).astype(np.float32)
    assert np.array_equal(recording.inputs[0][0], want)


@pytest.mark.quick
def test_content_encoding_sent_twice_is_both_encodings_and_two_hosts_are_no_host():
    recording = Recording()
    board, body = board_of(recording), instances(*rows_of(1).tolist())
    twice = posted(board, gzip.compress(body), [GZIP, GZIP])  # gzip twice, as one header "gzip, gzip" says
    assert twice.status == 415 and "'gzip, gzip'" in twice.error() and not recording.inputs
    for hosts in ((OWN_HOST, (b"host", b"evil.example")), ((b"host", b"evil.example"), OWN_HOST)):
        refused = Asked(board, "POST", PREDICT, body, headers=hosts)
        assert refused.status == 403 and not recording.inputs, hosts
    identity_then_gzip = posted(board, gzip.compress(body), [(b"content-encoding", b"identity"), GZIP])
    assert identity_then_gzip.status == 200 and len(recording.inputs) == 1


@pytest.mark.quick
@pytest.mark.parametrize("chunk", [64, 4096])
def test_a_gzip_bomb_in_small_undeclared_chunks_is_413_and_a_truncated_one_400(chunk):
    packer, parts, zeros = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16), [], b"0" * (1 << 20)
    for _ in range(table.MAX_BODY // len(zeros) + 2):
        parts.append(packer.compress(zeros))
    bomb = b"".join(parts) + packer.flush()
    recording = Recording()
    board = board_of(recording)
    answer = Asked(board, "POST", PREDICT, bomb, headers=(OWN_HOST, GZIP), chunk=chunk, declare=False)
    assert answer.status == 413 and "once inflated" in answer.error() and not recording.inputs
    body = instances(*rows_of(2).tolist())
    for cut in (5, 20, len(gzip.compress(body)) - 1):
        short = Asked(board, "POST", PREDICT, gzip.compress(body)[:cut], headers=(OWN_HOST, GZIP), chunk=chunk,
                      declare=False)
        assert short.status == 400 and not recording.inputs, (cut, short.body)


@pytest.mark.quick
def test_a_gzip_body_on_the_boards_own_json_route_is_read_as_the_plain_one(served):  # noqa: F811
    board = app.create_app(served)
    pixels = np.zeros(784, int)
    pixels[6 * 28 + 13:22 * 28:28] = 255
    body = json.dumps({"digit": 4, "input": pixels.tolist()}).encode()
    kept = Asked(board, "POST", "/board/keep", gzip.compress(body), headers=(OWN_HOST, GZIP))
    assert kept.status == 200, kept.body
    assert [digit for _, digit in served.kept.entries()] == [4]
    broken = Asked(board, "POST", "/board/keep", body, headers=(OWN_HOST, GZIP))
    assert broken.status == 400 and "the body is not gzip" in broken.error()
    assert len(served.kept.entries()) == 1
