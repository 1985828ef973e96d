"""What the course's scripts share, underneath them; it never imports a course script.

The scripts on top (mnist_generateds.py, mnist_forward.py, mnist_backward.py,
mnist_test.py, mnist_app.py and their LeNet-5 counterparts) read as the
course does; each step's machinery is here, one fact in one place:

  errors       DataError, ClusterError, Interrupted; exit_status for every main()
  cli          the parser every script builds; arguments inside a notebook
  files        atomic writes, removal, progress bars
  records      the TFRecord schema, file naming, verifying a file whole
  images       image files to 8-bit grayscale pixels (generator and app)
  idx          IDX files to the course's JPG layout (download, bundled sample)
  writer       label files and images to TFRecord files (the generator's machinery)
  inputs       queue-runner pipeline parts: many records per read, one exact pass
  networks     which network a checkpoint holds
  checkpoints  finding, verifying, restoring and saving checkpoints
  training     the training graph's parts and the one step loop
  distributed  parameter servers and workers on top of that loop
  report       the evaluation report (mnist_test.py --report)
  pictures     a user's picture to the network's input (mnist_app.py)

docs/design.md follows one image from JPG file to prediction through them.
"""
