"""The drawing board's memory after large pictures: freed pages handed back to the system (glibc on Linux).

A server that reads pictures of up to about 200 MB on many threads would
otherwise keep what each thread's arena once held. map_large_allocations
runs once as the board starts, give_back_memory after each picture
(mnistkit.board.page.under_limits); on another C library both do nothing.
"""
import ctypes
import functools
import sys


def give_back_memory():
    """Hand the memory a picture's reading freed back to the system: glibc's malloc_trim(0); nothing elsewhere.

    With map_large_allocations, what is left after a picture is small
    allocations in glibc's arenas; malloc_trim releases their free pages.
    Microseconds when little is free: a server calls it after each picture.
    """
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


def map_large_allocations():
    """From now on, glibc gives every allocation of MMAP_THRESHOLD bytes or more pages of its own, returned to the
    system as soon as it is freed (mallopt M_MMAP_THRESHOLD); nothing on another C library.

    By default glibc raises that threshold each time a large block is
    freed (up to 32 MB), and then serves a picture's decoded pixels and
    arrays from the arena of the thread reading it; a server that reads
    large pictures on many threads keeps each arena's free top (hundreds of
    MB in all), which malloc_trim does not give back. Called once, as the
    drawing board starts (mnistkit.board.app.serve).
    """
    libc = _glibc()
    if libc is not None:
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)


M_MMAP_THRESHOLD = -3  # mallopt's parameter number (glibc's malloc.h)
MMAP_THRESHOLD = 128 * 1024  # bytes: glibc's own starting value, kept fixed


@functools.lru_cache(maxsize=1)
def _glibc():
    """The C library when it is glibc (it has malloc_trim and mallopt), else None."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None)
    return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
