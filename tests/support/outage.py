"""A loopback TCP relay in front of a server, which a test takes down and brings back.

While it is down nothing listens on its port (a client's connection is refused, as when
the server behind it has stopped) and every connection it was relaying is reset; while it
is up it relays bytes both ways, unchanged. A test points a client at :attr:`Relay.url`
and gets a real outage of a real server without paying for the server's restart.
"""

from __future__ import annotations

import socket
import struct
import threading


class Relay:
    """127.0.0.1:``port`` relayed to 127.0.0.1:``target``; down until :meth:`up`.

    Args:
        target: the port of the server behind it.
        port: the relay's own port (stays the same across :meth:`down` and :meth:`up`).
    """

    def __init__(self, target: int, port: int) -> None:
        self.target, self.port = target, port
        self.url = f"http://127.0.0.1:{port}"
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    def up(self) -> None:
        """Listen again (a no-op while up)."""
        with self._lock:
            if self._listener is not None:
                return
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", self.port))
            s.listen(64)
            self._listener = s
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def down(self) -> None:
        """Stop listening and reset every relayed connection (a no-op while down)."""
        with self._lock:
            s, self._listener = self._listener, None
            conns, self._open = self._open, set()
        if s is not None:
            _close(s)
        for c in conns:
            try:  # a reset, as a stopped server's kernel sends: no orderly goodbye
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
            _close(c)

    def __enter__(self) -> "Relay":
        return self

    def __exit__(self, *exc) -> None:
        self.down()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # closed by down()
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.target), timeout=5)
                server.settimeout(None)
            except OSError:  # nothing behind: the client sees its connection closed
                _close(client)
                continue
            with self._lock:
                if self._listener is not listener:  # went down meanwhile
                    _close(client), _close(server)
                    return
                self._open |= {client, server}
            ends = threading.Semaphore(0)  # one release per direction that has ended
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(src, dst, ends),
                                 daemon=True).start()
            threading.Thread(target=self._reap, args=(client, server, ends),
                             daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket, ends: threading.Semaphore) -> None:
        """Copy ``src`` to ``dst`` until ``src`` ends, then end ``dst``'s writing side."""
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        ends.release()

    def _reap(self, client: socket.socket, server: socket.socket,
              ends: threading.Semaphore) -> None:
        """Close both sockets once both directions have ended."""
        ends.acquire(), ends.acquire()
        with self._lock:
            self._open -= {client, server}
        _close(client), _close(server)


def _close(s: socket.socket) -> None:
    """Wake whatever thread waits on ``s`` (accept or recv: closing alone would not, on
    Linux), then close it."""
    try:
        s.shutdown(socket.SHUT_RD)
    except OSError:
        pass
    try:
        s.close()
    except OSError:
        pass
