"""What the course's scripts share, underneath them; it never imports a course script.

The scripts on top (mnist_generateds.py, mnist_forward.py, mnist_backward.py,
mnist_test.py, mnist_app.py and their LeNet-5 counterparts) hold the course's
own calls in the course's order; what the course never had is here, one
fact in one place, reached from them through a few named calls:

  startup      imported first by every script: Ctrl-C while modules import, and a missing package, end in one line
  errors       DataError, ClusterError, Interrupted, Stopped; the stop signals
  cli          the parser every script builds, its options (Option), its exit status, progress bars
  files        atomic writes (one file, or several put in place together), removal
  folders      one writer per folder (the lock); a model folder's layout: checkpoint names, the index file, its record
               and learn history, a change of them all at once
  records      the TFRecord schema, file naming, verifying files whole, the queue runners' readers
  images       image files to 8-bit grayscale pixels (generator and app)
  idx          IDX files to the course's JPG layout (download, bundled sample)
  writer       label files and images to TFRecord files (the generator's machinery)
  inputs       tf.data over the same files; a failing reader in one line
  networks     each network's declaration; the course's two
  layers       forward()'s layers, found from the declaration, run with the answer; a unit's weights
  places       what a --model-dir holds: checkpoint files by name, SavedModels, .tflite files, one level off
  checkpoints  a checkpoint read whole, verified and restored; which one a reader takes; a missing one's hint
  saving       the trainer's saves: never over another run's checkpoint, whole or not at all, --keep's rotation
  history      --history's snapshots spread over a run (apart from the checkpoints), mnist_test.py's scores kept
  training     the step loop's machinery: settings, the resume check, retries, stop signals, TensorBoard, progress
  steps        --steps-per-run: K of the trainer's own steps in one tf.while_loop
  distributed  parameter servers and workers: server, session, synchronous optimizer
  report       the evaluation report (mnist_test.py --report)
  pictures     a user's picture to the network's input (mnist_app.py)
  formats      a file named from its first bytes (HEIC, GZIP TFRecord, IDX, ...)
  export       the SavedModel and LiteRT files of mnist_export.py
  deployed     those files read back for the app
  keep         the digits a user corrects on the board, kept in the course's JPG layout
  learn        training on from the kept digits, in the course's scripts, checked before it is used; undo, redo
               (mnist_learn.py; the board's learn)
  tether       a learn's script tied to the learn's process: it ends, and the learn's staging and lock go, when
               that process is killed
  listener     the board's socket and connections: a ceiling of descriptors, a bounded shutdown
  board/       the drawing board and TF Serving's REST API (mnist_app.py --serve), a package:
    app          its route table, what it serves and serve()
    table        the one ASGI app every route goes through: guard, body limit, thread, error form
    guard        the Host and Origin checks
    page         the page's files and a picture's answer
    inside       the Inside panel's answers: a picture's layers, a unit's weights
    mistakes     the test set's confusion matrix, scored on a thread, and its misread digits
    playback     training played back: the history snapshots, a picture through each (NumPy)
    serving      TF Serving's predict, status and metadata
    teach        keeping digits and learning from them
    model        the model that answers (and the --compare one), and the Follower of the newest

docs/design.md follows one image and one training step through them.
"""
