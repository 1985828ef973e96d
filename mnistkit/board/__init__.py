"""The drawing board (mnist_app.py --serve): a page to draw digits on, TF Serving's REST API, teaching and learning.

A local web server (uvicorn) that answers a page's drawings and photos with
the served model's digit, speaks TF Serving's REST API for the same model,
follows the newest model of --model-dir, keeps the digits a user corrects
and learns from them, and shows the network's layers for each answer, with
a second model beside it (--compare). One module per job; app imports the others, and no
module imports app:

  app      the route table (ROUTES), what is served (Served, open_board), create_app, serve
  table    Route, Call, Reply, BoardError and Board, the one ASGI app that gives every route
           the guard, the body limit, the thread hand-off and the error form
  guard    Access: the Host and Origin checks, CORS
  page     the page's files, its model line, a picture's answer
  inside   the Inside panel: a picture's layers from the same run as its answer, a unit's weights
  mistakes the test set's confusion matrix, scored once per model version on a thread; its misread digits
  playback training played back: the served folder's history snapshots, a picture through each of them
  serving  TF Serving's REST API: predict, version status, metadata
  teach    the kept digits' routes and the learn (Learning)
  model    Model (what answers) and Follower (the newest model of --model-dir)
  memory   the memory of large pictures handed back to the system (glibc's mallopt, malloc_trim)

The sockets and connections are mnistkit.listener's, the kept digits'
folder mnistkit.keep's, the learn mnistkit.learn's. docs/design.md ("The
drawing board") has the route table and how to add a route.
"""
