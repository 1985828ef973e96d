"""The eighth audit of issue #53's §5-§9 and §11 kinds: cases of each kind the earlier tests did not hold.

TF Serving's REST API (§6): a version written with leading zeros (/versions/07) is that version, as TF Serving
reads it (a whole number); a Content-Encoding header whose name comes in capitals (an ASGI server that passes names
as sent) is read; instances that mix named objects and plain rows are refused naming the mix. Clusters (§9): a
HOST:PORT listed twice in one host list is refused, under any spelling of this machine's loopback or the port. Each
test fails on a bug planted in the product, or on the code before its fix (docs/tests.md, "Eighth audit: §5-§9,
§11").
"""
import gzip
import json

import pytest

from test_board_routes import OWN_HOST, Asked
from test_server_faults import PREDICT, Recording, board_of, posted, rows_of


def instances(rows):
    return json.dumps({"instances": [list(map(float, row)) for row in rows]}).encode()


@pytest.mark.quick
@pytest.mark.parametrize("version", ["07", "007", "0000007"])
def test_a_version_written_with_leading_zeros_is_that_version(version):
    recording = Recording()
    board, body = board_of(recording), instances(rows_of(1))
    plain = posted(board, body, path="/v1/models/mnist/versions/7:predict")
    zeros = posted(board, body, path=f"/v1/models/mnist/versions/{version}:predict")
    assert (zeros.status, zeros.body) == (200, plain.body), zeros.body
    for tail in ("", "/metadata"):
        got = Asked(board, "GET", f"/v1/models/mnist/versions/{version}{tail}")
        assert (got.status, got.body) == (200, Asked(board, "GET", f"/v1/models/mnist/versions/7{tail}").body)
    assert posted(board, body, path="/v1/models/mnist/versions/070:predict").status == 404  # 70, not 7


@pytest.mark.quick
@pytest.mark.parametrize("name", [b"Content-Encoding", b"CONTENT-ENCODING"])
def test_a_content_encoding_header_named_in_capitals_is_read(name):
    recording = Recording()
    board, body = board_of(recording), instances(rows_of(2))
    plain = posted(board, body)
    for value in (b"gzip", b"GZIP"):
        zipped = posted(board, gzip.compress(body), [(name, value)])
        assert (zipped.status, zipped.body) == (200, plain.body), (name, value, zipped.body)
    refused = posted(board, body, [(name, b"br")])
    assert refused.status == 415 and "Content-Encoding 'br' is not taken" in refused.error()
    assert sum(map(len, recording.inputs)) == 3 * 2  # the plain body and the two gzipped, 2 rows each; not br


@pytest.mark.quick
def test_instances_that_mix_named_objects_and_plain_rows_are_refused_naming_the_mix():
    recording = Recording()
    board, row = board_of(recording), rows_of(1)[0].tolist()
    for mixed in ([{"images": row}, row], [row, {"images": row}]):
        answer = posted(board, json.dumps({"instances": mixed}).encode())
        assert answer.status == 400, answer.body
        assert answer.error().startswith('JSON Value: "instances" mixes objects ({"images": [...]}) and plain rows'), \
            answer.error()
    assert not recording.inputs


@pytest.mark.quick
@pytest.mark.parametrize("hosts", ["127.0.0.1:2222,127.0.0.1:2222", "localhost:2222,127.0.0.1:2222",
                                   "127.0.0.1:2222,127.0.0.1:02222", "127.0.0.1:2223,[::1]:2222,localhost:2222"])
def test_a_host_port_listed_twice_in_one_list_under_any_spelling_is_refused(hosts):
    from mnistkit import distributed
    with pytest.raises(ValueError) as refused:
        distributed.parse_hosts(hosts, "--ps_hosts")
    assert str(refused.value) == "--ps_hosts: 127.0.0.1:2222 is listed twice: give each task its own HOST:PORT"
    assert distributed.parse_hosts("127.0.0.1:2222,127.0.0.1:2223,localhost:2224", "--ps_hosts") == [
        "127.0.0.1:2222", "127.0.0.1:2223", "localhost:2224"]
