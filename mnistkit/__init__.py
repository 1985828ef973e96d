"""What the course's scripts share, underneath them; it never imports a course script.

The scripts on top (mnist_generateds.py, mnist_forward.py, mnist_backward.py,
mnist_test.py, mnist_app.py and their LeNet-5 counterparts) hold the course's
own calls in the course's order; what the course never had is here, one
fact in one place, reached from them through a few named calls:

  errors       DataError, ClusterError, Interrupted; exit_status for every main()
  cli          the parser every script builds; arguments inside a notebook
  files        atomic writes, removal, progress bars
  records      the TFRecord schema, file naming, verifying a file whole
  images       image files to 8-bit grayscale pixels (generator and app)
  idx          IDX files to the course's JPG layout (download, bundled sample)
  writer       label files and images to TFRecord files (the generator's machinery)
  inputs       the --pipeline choices, many records per read, tf.data, a failing reader in one line
  networks     which network a checkpoint holds
  checkpoints  finding, verifying, restoring and saving checkpoints
  training     the step loop's machinery: the run's settings and data, its retries, its errors
  signals      stop signals as a flag; telling a paused process from a stuck input
  summaries    TensorBoard: the step's scalars, examples per second, events files
  schedule     schedule.json: no resuming at another batch size
  distributed  parameter servers and workers: server, session, synchronous optimizer
  report       the evaluation report (mnist_test.py --report)
  pictures     a user's picture to the network's input (mnist_app.py)

docs/design.md follows one image and one training step through them.
"""
