"""Benchmark: how often "that is not a digit" is said, on test digits, on drawings and on made non-digits.

Usage (from a folder holding model/ and data/mnist_test.tfrecords, e.g.
after `python mnist_generateds.py` on the full MNIST and `python mnist_backward.py`):
  python bench/not_a_digit.py                          # model/, data/
  python bench/not_a_digit.py --model-dir model_lenet5 --data-dir data

The rates, each the share of pictures said to be "not a digit"
(mnistkit.reference: the distance to the nearest test digits in the input
pixels and in the network's last hidden layer, against the threshold of the
digit it answers):
  1. the test digits of --data-dir (MNIST's test set when the records are
     the full one), each scored against the others (itself left out): the
     board promises at most 1 %; and, as a check of that by digits the
     reference has not seen, half of them scored against a reference made
     of the other half;
  2. drawings: tests/handmade.py's pen-drawn digits 0-9, --seeds hands
     each, prepared as the board prepares a drawing (mnist_app.prepared_pixels);
  3. non-digits made here (tests/handmade.py non_digits: letters, shapes, a
     dot, scribbles, noise, two digits touching); pictures the preparation
     refuses first ("no digit", "several digits") are counted apart: they
     are told too, by the preparation's own line;
  4. shapes drawn on the board (its 280-pixel canvas, its 18-pixel pen: a
     square filled in, a square's outline, a blot, a triangle), which the
     board prepares as any drawing;
  5. non-digits of kinds (tests/handmade.py made_non_digit: letters by pen
     and in a font, filled shapes, outlines, a circle with a cross, smileys,
     stars, scribbles, noise, two or three digits side by side, a textured
     thing), --per-kind of each, even seeds the half any change of the
     judgment was tuned on, odd seeds the half held out to check it.
The figures go to docs/inside.md.
"""
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]  # tests/handmade.py's drawings and non-digits
from mnistkit import cli  # noqa: E402


def judge(predictor, made, pictures):
    """[(name, said)] for named uint8 pictures: said True / False, or the preparation's refusal (str)."""
    import numpy as np
    import mnist_app
    from mnistkit.errors import DataError
    found = []
    for name, picture in pictures:
        try:
            pixels = mnist_app.prepared_pixels(_png(picture), name=name)
        except DataError as e:
            found.append((name, str(e)))
            continue
        rows = pixels.reshape(1, 784).astype(np.float32) / 255
        probabilities, values = predictor.inside.run(rows)
        place = made.place(rows[0], values[-2][0], probabilities[0])
        found.append((name, place["not_a_digit"], int(np.argmax(probabilities[0])), float(probabilities[0].max()),
                      " ".join(f"{s['space']} {s['score']:.2f}/{s['threshold']:.2f}" for s in place["spaces"])))
    return found


def board_shapes(side=280, pen=18):
    """[(name, uint8 [side, side])]: shapes drawn on the board's canvas with its pen (board.js LINE_WIDTH)."""
    from PIL import Image, ImageDraw
    import numpy as np
    shapes = {"square filled in": lambda draw: draw.rectangle((60, 60, 220, 220), fill=0),
              "square's outline": lambda draw: draw.rectangle((60, 60, 220, 220), outline=0, width=pen),
              "blot": lambda draw: draw.ellipse((80, 90, 200, 210), fill=0),
              "triangle": lambda draw: draw.line([(140, 50), (230, 220), (50, 220), (140, 50)], fill=0, width=pen,
                                                 joint="curve")}
    found = []
    for name, draw in shapes.items():
        canvas = Image.new("L", (side, side), 255)
        draw(ImageDraw.Draw(canvas))
        found.append((name, np.asarray(canvas)))
    return found


def _png(picture):
    import io
    from PIL import Image
    out = io.BytesIO()
    Image.fromarray(picture, mode="L").save(out, format="PNG")
    return out.getvalue()


def main():
    parser = cli.new_parser(__doc__)
    parser.add_argument("--model-dir", default="model")
    parser.add_argument("--data-dir", default="data")
    parser.add_argument("--seeds", type=int, default=5, help="hands per drawn digit")
    parser.add_argument("--per-kind", type=int, default=12, help="made non-digits of each kind (half tuned on, "
                        "half held out)")
    parser.add_argument("--verbose", action="store_true", help="one line per picture")
    args = parser.parse_args()
    import numpy as np
    import handmade
    import mnist_app
    from mnistkit import reference
    from mnistkit.board.model import files_state

    predictor = mnist_app.load_predictor(args.model_dir)
    started = time.perf_counter()
    made = reference.reference_of(predictor.inside, files_state(predictor.source), args.data_dir,
                                  log=lambda line: print(line, file=sys.stderr))
    took = time.perf_counter() - started
    hidden, probabilities = reference.hidden_of(predictor.inside, made.images)
    answers = probabilities.argmax(axis=1)
    said = made.said(answers)
    print(f"{predictor.network.label} from {predictor.source}; reference: {len(made.labels):,} test digits of "
          f"{made.source} ({took:.1f} s, cached after the first run); thresholds "
          + "; ".join(f"{s.name} {' '.join(f'{t:.2f}' for t in s.thresholds)}" for s in made.spaces))
    by_space = [np.mean(reference.own_scores(s.features) > s.thresholds[answers]) for s in made.spaces]
    print(f"1. test digits said not a digit: {said.mean():.2%} ({int(said.sum())} of {len(said):,}; "
          + ", ".join(f"{s.name} alone {r:.2%}" for s, r in zip(made.spaces, by_space)) + "); the board promises <= 1%")
    order = np.random.default_rng(0).permutation(len(answers))
    half, other = order[:len(order) // 2], order[len(order) // 2:]
    halved = reference.Reference.made(made.layer, hidden[half], probabilities[half], made.labels[half], made.source,
                                      made.images[half])
    apart = [halved.place(made.images[i] / 255, hidden[i], probabilities[i])["not_a_digit"] for i in other]
    print(f"   held out: {np.mean(apart):.2%} of {len(other):,} test digits said not a digit against a reference of "
          f"the other {len(half):,}")

    drawings = [(f"drawn {d} hand {s}", handmade.on_paper(handmade.draw_digit(d, 200, 0.06, seed=s)))
                for d in range(10) for s in range(args.seeds)]
    said = judge(predictor, made, drawings)
    judged = [s for s in said if not isinstance(s[1], str)]
    right = sum(int(s[0].split()[1]) == s[2] for s in judged)
    print(f"2. drawings said not a digit: {sum(s[1] for s in judged) / max(len(judged), 1):.1%} "
          f"({sum(s[1] for s in judged)} of {len(judged)}; {len(said) - len(judged)} refused by the preparation; "
          f"{right} of {len(judged)} read right)")

    others = judge(predictor, made, [(name, handmade.on_paper(ink)) for name, ink in handmade.non_digits().items()])
    judged = [s for s in others if not isinstance(s[1], str)]
    caught = sum(s[1] for s in judged)
    print(f"3. non-digits said not a digit: {caught / max(len(judged), 1):.0%} ({caught} of {len(judged)}; "
          f"{len(others) - len(judged)} more refused by the preparation first)")
    kinds = {}
    for name, *rest in others:
        kind = name.rsplit(" ", 1)[0] if name.split()[0] in ("letter", "scribble", "noise", "two") else name
        kinds.setdefault(kind, []).append("refused" if isinstance(rest[0], str) else bool(rest[0]))
    for kind, values in kinds.items():
        print(f"   {kind:16s} {sum(v is True for v in values)} of {len(values)} said"
              + (f", {values.count('refused')} refused first" if "refused" in values else ""))
    board = judge(predictor, made, board_shapes())
    told = [s for s in board if not isinstance(s[1], str)]
    print(f"4. shapes drawn on the board said not a digit: {sum(s[1] for s in told)} of {len(told)} ("
          + ", ".join(f"{s[0]}: {'refused' if isinstance(s[1], str) else 'read as %d, %s' % (s[2], 'not a digit' if s[1] else 'a digit')}"
                      for s in board) + ")")
    made_kinds = [(f"{kind} {seed}", handmade.on_paper(handmade.made_non_digit(kind, seed)))
                  for kind in handmade.NON_DIGIT_KINDS for seed in range(args.per_kind)]
    kinds = judge(predictor, made, made_kinds)
    for part, name in ((0, "tuning half (even seeds)"), (1, "held-out half (odd seeds)")):
        chosen = [s for s in kinds if int(s[0].rsplit(" ", 1)[1]) % 2 == part]
        told = [s for s in chosen if not isinstance(s[1], str)]
        caught = sum(s[1] for s in told)
        print(f"5. made non-digits of kinds, {name}: {caught / max(len(told), 1):.0%} ({caught} of {len(told)}; "
              f"{len(chosen) - len(told)} more refused by the preparation first)")
    print("   " + ", ".join(
        f"{kind}: {sum(s[1] is True for s in kinds if s[0].rsplit(' ', 1)[0] == kind)} of "
        f"{sum(not isinstance(s[1], str) for s in kinds if s[0].rsplit(' ', 1)[0] == kind)}"
        for kind in handmade.NON_DIGIT_KINDS))
    if args.verbose:
        for line in said + others + board + kinds:
            print("  ", *line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
