"""The reasons (POST /board/why), the map (GET /board/atlas) and "not a digit", checked on the checkpoints themselves.

The contributions and the missing ink are recomputed here from each checkpoint's moving averages
(tf.train.load_checkpoint): for the 784-500-10 network in NumPy, by the exact formula of its active units; for
LeNet-5 by TensorFlow's own gradient of forward()'s logit, in a graph of its own. The pixels' shares plus the bias
must give the logit within 1e-4 (784-500-10) and 1e-3 (LeNet-5).
"""
import base64
import json
import os

import numpy as np
import pytest

import handmade
import mnist_app
import mnist_forward
import mnist_lenet5_forward
from conftest import wait_limit
from mnistkit import reference
from mnistkit.board import app, atlas, why
from test_board import drawn, png_bytes
from test_board_routes import Asked
from test_inside import bundled_digits, shadows

MLP, LENET5 = mnist_forward.NETWORK, mnist_lenet5_forward.NETWORK
EXACT = {MLP.label: 1e-4, LENET5.label: 1e-3}  # the sums' promised precision
MOST_BYTES = 150_000  # an answer of /board/why (with versus) or /board/atlas


def tf_gradient(network, v, x, digit):
    """(logit, d logit / d x float64 [784]) of forward() with the variables v, by TensorFlow's tf.gradients."""
    from tf_compat import tf
    forward = mnist_forward.forward if network is MLP else mnist_lenet5_forward.forward
    with tf.Graph().as_default():
        images = tf.placeholder(tf.float64, [1, 784])
        logits = forward(tf.cast(images, tf.float32), None)
        grad = tf.gradients(logits[0, digit], images)[0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for variable in tf.global_variables():
                variable.load(v[variable.op.name].astype(np.float32), sess)
            logit, found = sess.run([logits[0, digit], grad], {images: x[None]})
    return float(logit), found[0]


@pytest.mark.parametrize("network", [MLP, LENET5], ids=["mlp", "lenet5"])
def test_the_shares_are_the_checkpoints_exact_decomposition(served, network):
    model = app.open_board(lambda: served[network.label], lambda data, name: None, "unused").model
    v = shadows(served[network.label].ckpt)
    for x in bundled_digits(3).astype(np.float64):
        pixels = np.round(x * 255).astype(np.uint8).reshape(28, 28)
        x = pixels.reshape(-1) / 255.0
        answer = why.why_answer(model, pixels)
        digit = answer["digit"]
        runner_up = int(np.argsort(-np.array(answer["probabilities"]))[1])
        both = why.why_answer(model, pixels, digit, runner_up)
        for part, d in ((answer["contributions"], digit), (both["versus"], runner_up)):
            assert part["digit"] == d
            if network is MLP:  # the formula of the active units A
                active = (x @ v["w1"] + v["b1"]) > 0
                grad = v["w1"][:, active] @ v["w2"][active, d]
                bias = v["b1"][active] @ v["w2"][active, d] + v["b2"][d]
                logit = (np.maximum(x @ v["w1"] + v["b1"], 0) @ v["w2"] + v["b2"])[d]
                assert part["bias"] == pytest.approx(bias, abs=EXACT[network.label])
            else:
                logit, grad = tf_gradient(network, v, x, d)
            np.testing.assert_allclose(part["pixels"], x * grad, atol=1e-5, rtol=1e-4)
            assert sum(part["pixels"]) + part["bias"] == pytest.approx(logit, abs=EXACT[network.label])
            assert both["logits"][d] == pytest.approx(logit, abs=EXACT[network.label])
            if d == digit:
                np.testing.assert_allclose(answer["missing_ink"]["pixels"], grad, atol=1e-5, rtol=1e-4)
                assert answer["missing_ink"]["digit"] == digit
        assert both["difference"]["pixels"] == pytest.approx(
            np.array(both["contributions"]["pixels"]) - np.array(both["versus"]["pixels"]), abs=1e-5)
        assert both["difference"]["bias"] == pytest.approx(both["contributions"]["bias"] - both["versus"]["bias"],
                                                           abs=1e-5)
        assert len(json.dumps(both)) <= MOST_BYTES
        assert both["line"].startswith("return tf.matmul(") and both["at"].startswith(network.forward + ".py:")


def test_the_why_route_answers_as_why_answer_and_refuses_bad_input_in_one_line(compared_board):
    _, asgi = compared_board
    png = png_bytes(drawn(4))
    answer = Asked(asgi, "POST", "/board/why?digit=9&versus=4", png)
    assert answer.status == 200 and len(answer.body) <= MOST_BYTES
    found = json.loads(answer.body)
    assert (found["contributions"]["digit"], found["versus"]["digit"], found["missing_ink"]["digit"]) == (9, 4, 9)
    assert len(found["input"]) == len(found["contributions"]["pixels"]) == len(found["missing_ink"]["pixels"]) == 784
    for query, line in (("digit=10", "digit=10: give a digit from 0 to 9"),
                        ("digit=x", "digit=x: give a digit from 0 to 9"),
                        ("versus=-1", "versus=-1: give a digit from 0 to 9"),
                        ("digit=3&colour=red", "colour: not a query of /board/why")):
        refused = Asked(asgi, "POST", "/board/why?" + query, png)
        assert refused.status == 400 and refused.error().startswith(line), query
    assert Asked(asgi, "POST", "/board/why", b"not a picture").status == 400
    assert Asked(asgi, "GET", "/board/why").status == 405
    foreign = Asked(asgi, "POST", "/board/why", png, headers=((b"host", b"evil.example"),))
    assert foreign.status == 403


def waited_atlas(asgi, query=""):
    """GET /board/atlas until it is done (202 meanwhile, each with its progress), within a generous limit."""
    import time
    deadline = time.monotonic() + wait_limit(600)
    while True:
        answer = Asked(asgi, "GET", "/board/atlas" + query)
        if answer.status != 202:
            return answer
        making = json.loads(answer.body)
        assert making["status"] == "making" and making["done"] <= making["total"] or not making["total"]
        assert time.monotonic() < deadline, f"the atlas was still being made after {wait_limit(600):.0f} s: {making}"
        time.sleep(0.2)


@pytest.mark.parametrize("query", ["", "?model=compare"], ids=["mlp", "lenet5"])
def test_the_atlas_places_every_test_digit_with_its_label(compared_board, query, two_models):
    _, asgi = compared_board
    answer = waited_atlas(asgi, query)
    assert answer.status == 200 and len(answer.body) <= MOST_BYTES
    found = json.loads(answer.body)
    images, labels, _ = reference.test_digits(str(two_models / "data"))
    assert found["count"] == len(labels) and found["layer"] == ("y1" if not query else "fc1")
    assert np.array_equal(np.frombuffer(base64.b64decode(found["labels"]), np.uint8), labels)
    points = np.frombuffer(base64.b64decode(found["points"]), "<u2").reshape(-1, 2)
    assert points.min() == 0 and points.max() == atlas.SCALE
    # the map separates the digits: each digit's points lie nearer their own digit's middle than chance would
    by_digit = np.array([points[labels == d].mean(axis=0) for d in range(10)])
    nearest = np.argmin(((points[:, None] - by_digit[None]) ** 2).sum(axis=2), axis=1)
    assert (nearest == labels).mean() > 0.3
    assert Asked(asgi, "GET", "/board/atlas?x=1").status == 400


CHOSEN = ("star", "triangle", "cross-hatch", "square outline", "letter M", "letter W", "scribble 1")  # of non_digits
HELD_OUT = range(1, 12, 2)  # handmade.made_non_digit's odd seeds: the half the judgment was not tuned on
# Of them said "not a digit" at least, by the first network (784-500-10) and by LeNet-5: 44-60% by the fixtures of
# three runs, then 46-50% and 34-52% by 5 two_models trained again (LeNet-5's 200 steps vary the more; docs/tests.md,
# "A model trained again"). A judgment that never says it says 0.
FLOOR = (0.35, 0.25)
CHOSEN_FLOOR = 2  # of the 7 CHOSEN said (or refused) by each network: 3 to 5 by the same 5 two_models


@pytest.mark.long
def test_not_a_digit_on_made_non_digits_and_drawn_digits(compared_board):
    """Each network (the first, and --compare's in predict's "compare" block) says "not a digit" for most made
    non-digits and for no drawn digit. The references are waited for (a condition: the atlas answers 200), so that
    no answer comes while they are made (null)."""
    _, asgi = compared_board
    for query in ("", "?model=compare"):
        placed = waited_atlas(asgi, query)
        assert placed.status == 200, (query, placed.status, placed.body[:300])

    def said(picture, name):
        """(first's not_a_digit, compare's) of a picture, or None when the preparation refuses it (no digit, several
        digits: said in its own line)."""
        answer = Asked(asgi, "POST", "/board/predict", png_bytes(picture))
        if answer.status == 400:
            assert "no digit found" in answer.error() or "several" in answer.error(), (name, answer.error())
            return None
        found = json.loads(answer.body)
        return found["not_a_digit"], found["compare"]["not_a_digit"]

    made = handmade.non_digits()
    chosen = {name: said(handmade.on_paper(made[name]), name) for name in CHOSEN}
    kinds = {f"{kind} {seed}": said(handmade.on_paper(handmade.made_non_digit(kind, seed)), kind)
             for kind in handmade.NON_DIGIT_KINDS for seed in HELD_OUT}
    digits = {d: said(drawn(d), f"drawn {d}") for d in range(10)}
    for network in (0, 1):
        told = [v[network] for v in kinds.values() if v is not None]
        assert all(isinstance(v, bool) for v in told) and len(told) >= 40, kinds
        assert sum(told) >= FLOOR[network] * len(told), (network, kinds)
        assert sum(v is None or v[network] for v in chosen.values()) >= CHOSEN_FLOOR, (network, chosen)
        assert [d for d, v in digits.items() if v[network] is not False] == [], (network, digits)
    inside = json.loads(Asked(asgi, "POST", "/board/inside", png_bytes(drawn(3))).body)
    place = inside["atlas"]
    assert len(place["nearest"]) == reference.NEIGHBOURS and inside["not_a_digit"] == place["not_a_digit"]
    assert [n["distance"] for n in place["nearest"]] == sorted(n["distance"] for n in place["nearest"])
    assert all(len(n["input"]) == 784 for n in place["nearest"])
    assert [s["space"] for s in place["spaces"]] == [reference.INPUT, "y1"]
    assert place["not_a_digit"] == any(s["score"] > s["threshold"] for s in place["spaces"])


@pytest.mark.parametrize("network", [MLP, LENET5], ids=["mlp", "lenet5"])
def test_the_test_digits_are_below_the_thresholds_but_for_under_one_percent(served, two_models, network):
    """Each space passes all but at most 100 - QUANTILE percent of the test digits (each against the others: each
    answered digit's threshold is one of its digits' scores, not one between two, which let one digit more past it
    per answered digit); both together all but at most the two spaces' sum, and under the 1% the board promises."""
    inside = served[network.label].inside
    images, labels, source = reference.test_digits(str(two_models / "data"))
    hidden, probabilities = reference.hidden_of(inside, images)
    made = reference.Reference.made(inside.layers[-2].name, hidden, probabilities, labels, source, images)
    answers = probabilities.argmax(axis=1)
    alone = [np.mean(reference.own_scores(space.features) > space.thresholds[answers]) for space in made.spaces]
    assert all(0 <= rate <= (100 - reference.QUANTILE) / 100 for rate in alone), alone
    assert max(alone) <= made.said(answers).mean() <= min(sum(alone), 0.01), (alone, made.said(answers).mean())


@pytest.mark.quick
def test_each_threshold_is_a_digits_score_with_at_most_the_quantiles_rest_past_it():
    """thresholds_of: for each digit answered at least FEWEST times, the threshold is one of its digits' scores and
    at most 100 - QUANTILE percent of them lie past it, for any count of digits (no interpolated step letting one
    more past); a digit answered fewer times takes the threshold of them all."""
    rng = np.random.default_rng(11)
    for n in (137, 2000, 9999):
        scores = rng.gamma(2.0, 1.0, n)
        answers = rng.integers(0, 10, n)
        answers[answers == 4] = 5  # 4 never answered
        thresholds = reference.thresholds_of(scores, answers)
        for d in range(10):
            own = scores[answers == d]
            if len(own) >= reference.FEWEST:
                assert thresholds[d] in own
                assert (own > thresholds[d]).sum() <= (100 - reference.QUANTILE) / 100 * len(own), (n, d)
                assert (own >= thresholds[d]).sum() > (100 - reference.QUANTILE) / 100 * len(own) - 1, (n, d)
            else:
                assert thresholds[d] in scores and (scores > thresholds[d]).mean() <= (100 - reference.QUANTILE) / 100


@pytest.mark.quick
def test_place_is_the_distances_to_the_nearest_test_digits_in_both_spaces():
    """Reference.place recomputed by brute force in NumPy: in each space the mean distance to the NEIGHBOURS
    nearest test digits (on the components and the rest's length), against the answered digit's threshold; "not a
    digit" when either is past its threshold."""
    rng = np.random.default_rng(5)
    n = 400
    images = (rng.random((n, 784)) < 0.2).astype(np.uint8) * 255
    hidden = np.maximum(rng.normal(size=(n, 60)), 0).astype(np.float32)
    probabilities = rng.dirichlet(np.ones(10), n).astype(np.float32)
    made = reference.Reference.made("h", hidden, probabilities, rng.integers(0, 10, n), "made here", images)
    for i, (x, h) in enumerate([(images[0] / 255, hidden[0]), (rng.random(784), rng.random(60) * 3),
                                (np.zeros(784), np.zeros(60))]):
        p = probabilities[i]
        place = made.place(x, h, p)
        for space, values in zip(made.spaces, (x, h)):
            centred = values.astype(np.float64) - space.mean
            on = space.components.astype(np.float64) @ centred
            found = np.append(on, np.sqrt(max(centred @ centred - on @ on, 0)))
            distances = np.sqrt(((space.features.astype(np.float64) - found) ** 2).sum(axis=1))
            score = np.sort(distances)[:reference.NEIGHBOURS].mean()
            said = next(s for s in place["spaces"] if s["space"] == space.name)
            assert said["score"] == pytest.approx(score, abs=1e-3)
            assert said["threshold"] == pytest.approx(space.thresholds[np.argmax(p)], abs=1e-4)
            assert said["far"] == (score > space.thresholds[np.argmax(p)])
        assert place["not_a_digit"] == any(s["far"] for s in place["spaces"])
        assert [n["record"] for n in place["nearest"]][0] == (0 if i == 0 else place["nearest"][0]["record"])
    assert made.place(images[0] / 255, hidden[0], probabilities[0])["nearest"][0]["distance"] == 0


@pytest.mark.quick
def test_a_model_without_an_exact_gradient_is_409_in_one_line_and_predict_goes_on():
    from mnistkit.board import model
    from test_board_routes import Stand
    bar = np.zeros((28, 28), np.uint8)
    bar[6:22, 13:16] = 255
    asgi = app.create_app(app.Served(model.Model(Stand(), lambda data, name: bar)))
    refused = Asked(asgi, "POST", "/board/why?versus=1", b"any picture")
    assert refused.status == 409 and refused.error() == (f"{Stand.source}: this model shows no layers; the reasons "
                                                         f"need the layers")
    assert Asked(asgi, "POST", "/board/why?versus=12", b"any picture").status == 400  # the query is checked first
    assert Asked(asgi, "GET", "/board/atlas").status == 409
    predicted = json.loads(Asked(asgi, "POST", "/board/predict", b"any picture").body)
    assert predicted["digit"] == 7 and predicted["not_a_digit"] is None

    class Int8(Stand):
        source, input = "export/mnist_int8.tflite", {"dtype": np.int8}
        inside = type("Shown", (), {"problem": None, "layers": ()})()
    line = why.cannot_explain(model.Model(Int8(), lambda data, name: bar))
    assert line.startswith("export/mnist_int8.tflite: an int8 .tflite rounds its weights and activations to 8 bits")


def test_the_app_says_not_a_digit_in_its_json_and_its_line(two_models, tmp_path):
    from conftest import run_main
    made = handmade.non_digits()
    (tmp_path / "star.png").write_bytes(png_bytes(handmade.on_paper(made["star"])))
    (tmp_path / "three.png").write_bytes(png_bytes(drawn(3)))
    model_dir = str(two_models / "model")
    result = run_main("mnist_app.py", "--model-dir", model_dir, "--json", str(tmp_path / "star.png"),
                      str(tmp_path / "three.png"), cwd=two_models)
    assert result.returncode == 0, result.stderr
    answers = {os.path.basename(entry["file"]): entry for entry in json.loads(result.stdout)}
    assert answers["three.png"]["not_a_digit"] is False and answers["three.png"]["prediction"] == 3
    assert isinstance(answers["star.png"]["not_a_digit"], bool)
    lines = run_main("mnist_app.py", "--model-dir", model_dir, str(tmp_path / "star.png"), cwd=two_models)
    said = answers["star.png"]["not_a_digit"]
    assert lines.stdout.rstrip().endswith(mnist_app.NOT_A_DIGIT) == said, lines.stdout
    assert "这不是数字" not in lines.stdout  # English output in English only (trial 7); the page's zh twin says it


def test_the_exports_give_the_checkpoints_reasons_and_the_int8_file_says_it_cannot(exported_workdir):
    from mnistkit import deployed
    from mnistkit.board import model
    work = exported_workdir
    forms = {"checkpoint": mnist_app.Predictor(str(work / "model")),
             "SavedModel": deployed.load(str(work / "export" / "mnist")),
             "LiteRT": deployed.load(str(work / "export" / "mnist.tflite"))}
    pixels = np.round(bundled_digits(1)[0] * 255).astype(np.uint8).reshape(28, 28)
    found = {form: why.why_answer(model.Model(predictor, lambda data, name: None), pixels, versus=3)
             for form, predictor in forms.items()}
    for form in ("SavedModel", "LiteRT"):
        for part in ("contributions", "versus", "missing_ink"):
            np.testing.assert_allclose(found[form][part]["pixels"], found["checkpoint"][part]["pixels"], atol=1e-4,
                                       err_msg=f"{form} {part}")
        assert sum(found[form]["contributions"]["pixels"]) + found[form]["contributions"]["bias"] == pytest.approx(
            found[form]["logits"][found[form]["digit"]], abs=1e-4)
    int8 = model.Model(deployed.load(str(work / "export" / "mnist_int8.tflite")), lambda data, name: None)
    assert "an int8 .tflite rounds its weights and activations to 8 bits" in why.cannot_explain(int8)


def test_why_history_playback_and_predict_answer_for_the_compare_network_too(compared_board, two_models):
    """?model=compare names the --compare network (LeNet-5) on why, history and playback, as on the other routes;
    predict's compare block says not_a_digit as the first network's answer does; an unknown model is 400."""
    _, asgi = compared_board
    png = png_bytes(drawn(4))
    first, other = (json.loads(Asked(asgi, "POST", "/board/why" + query, png).body) for query in ("", "?model=compare"))
    assert (first["model"]["network"], other["model"]["network"]) == (MLP.label, LENET5.label)
    for found in (first, other):
        part = found["contributions"]
        assert sum(part["pixels"]) + part["bias"] == pytest.approx(found["logits"][part["digit"]],
                                                                   abs=EXACT[found["model"]["network"]])
    assert first["logits"] != other["logits"]
    listed = json.loads(Asked(asgi, "GET", "/board/history?model=compare").body)
    assert listed["model"]["network"] == LENET5.label and listed["snapshots"]
    assert all(os.path.realpath(s["checkpoint"]).startswith(os.path.realpath(two_models / "model_lenet5"))
               for s in listed["snapshots"]), listed["snapshots"]
    played = json.loads(Asked(asgi, "POST", "/board/playback?model=compare", png).body)
    assert [s["global_step"] for s in played["snapshots"]] == [s["global_step"] for s in listed["snapshots"]]
    assert played["model"]["network"] == LENET5.label
    step = listed["snapshots"][-1]["global_step"]
    unit = json.loads(Asked(asgi, "GET", f"/board/history/unit?step={step}&layer=conv1&unit=0&model=compare").body)
    assert unit["model"]["network"] == LENET5.label and unit["global_step"] == step
    predicted = json.loads(Asked(asgi, "POST", "/board/predict", png).body)
    assert "not_a_digit" in predicted["compare"] and predicted["compare"]["model"]["network"] == LENET5.label
    for method, path, body in (("POST", "/board/why?model=lenet", png), ("GET", "/board/history?model=bogus", b""),
                               ("POST", "/board/playback?model=bogus", png)):
        refused = Asked(asgi, method, path, body)
        assert refused.status == 400 and refused.error().startswith("model="), (path, refused.error())
