"""The CoACD helper process: ``python -m scenegen.assets.collision._coacd_server FD``.

Reads ``(call, vertices, faces, settings)`` requests from the connection on file
descriptor FD and answers ``("ok", parts)`` or ``("error", message)``, one at a time,
until the connection closes. Started by :mod:`scenegen.assets.collision.coacd`; a fresh
interpreter, so it neither inherits running thread pools nor re-runs the caller's script.
"""

from __future__ import annotations

import sys
from multiprocessing.connection import Connection


def serve(conn: Connection) -> None:
    """Answer requests until the other end closes the connection."""
    while True:
        try:
            call, vertices, faces, settings = conn.recv()
        except (EOFError, OSError):
            return
        try:
            conn.send(("ok", call(vertices, faces, settings)))
        except Exception as exc:  # reported to the caller
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


if __name__ == "__main__":
    serve(Connection(int(sys.argv[1])))
