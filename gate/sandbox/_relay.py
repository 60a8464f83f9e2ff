"""A byte relay between a TCP listener on a container's loopback and a Unix socket.

Standalone (it imports nothing from the gate): the docker sandbox copies it into a command
agent's container, where ``python3 -I _relay.py PORT SOCKET`` listens on ``127.0.0.1:PORT``,
forwards every connection to ``SOCKET`` (bind-mounted from the host, where the gate forwards it
to that run's meter), and puts itself in the background once it listens (holding none of the
command's streams). The container has no network at all: this is the only way out, and it
leads to one place. With ``--announce`` it prints the background server's pid and start time
(the long-lived container's phase boundary knows the gate's own relay by them, not by name).
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading


def pipe(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until either side closes; then close both."""

    def one_way(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)

    t = threading.Thread(target=one_way, args=(b, a), daemon=True)
    t.start()
    one_way(a, b)
    t.join()
    a.close()
    b.close()


def serve(listener: socket.socket, connect: object) -> None:
    """Accept on ``listener`` forever; pipe each connection to a fresh ``connect()``."""
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        try:
            upstream = connect()  # type: ignore[operator]
        except OSError:
            client.close()
            continue
        threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()


def main(argv: list[str]) -> None:
    port, path = int(argv[0]), argv[1]
    announce = argv[2:] == ["--announce"]  # print the server's pid and start time
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)

    def connect() -> socket.socket:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        return s

    child = os.fork()
    if child:  # listening: the parent returns, so the agent starts only now
        if announce:  # /proc/<pid>/stat's field 22, after the command name in parentheses
            with open(f"/proc/{child}/stat") as fh:
                print(child, fh.read().rsplit(")", 1)[1].split()[19], flush=True)
        os._exit(0)
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)  # holding no stream of the command that started it
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    serve(listener, connect)


if __name__ == "__main__":
    main(sys.argv[1:])
