"""NumPy's matrix products on the board's own threads: BLAS limited to one thread of its own per product.

The board answers requests on threads of its own, and its NumPy work
(the playback's snapshots, the reasons' gradients) is small matrix
products: a LeNet-5 conv layer is a [196, 800] x [800, 64] product. BLAS
(OpenBLAS, NumPy's wheels' own) splits each product between its threads,
one per core, and waits for all of them: on a loaded machine, where another
process holds the core one of them needs, such a product took 25 ms
instead of 0.3 ms (docs/inside.md, "How fast, how large"). With one thread,
each product runs on the thread that asks for it, and the board's threads
still answer requests side by side.
"""
import numpy  # noqa: F401 (loaded first: threadpoolctl limits the BLAS libraries already in the process)


def one_blas_thread():
    """From now on, every BLAS library NumPy loaded runs each product on the calling thread (threadpoolctl's
    threadpool_limits(1), for the whole process). Called as a board is opened (mnistkit.board.app.open_board);
    does nothing where no BLAS library is found."""
    from threadpoolctl import threadpool_limits
    threadpool_limits(1, user_api="blas")
