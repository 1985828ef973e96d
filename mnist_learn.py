"""Learn from your own digits: the served model trained on, with the digits you kept mixed into every batch.

Run mnist_app.py --serve first and keep digits with the page's buttons
"That was a ..." (they go to ./my_digits and ./my_digits.txt, the course
layout). This script then does what the page's button "Learn from my
digits" does: mnist_generateds.py turns the kept digits into
TFRecords, and the model folder's trainer (mnist_backward.py, or
mnist_lenet5_backward.py) goes on from the newest checkpoint with
--mix-records, in a staging folder; the new checkpoint joins ./model/ only
when the training ends well. Its --undo goes back to the
checkpoint from before (mnistkit/learn.py; docs/teach.md).
"""
if __name__ == "__main__":  # before any other import: a Ctrl-C while TensorFlow imports ends in one line
    import mnistkit.startup  # noqa: F401

import sys

from mnistkit import learn

main = learn.main

if __name__ == "__main__":
    sys.exit(main())
