"""A real grpcio client for the runner's guest services, and small HTTP helpers.

Shared by tests/task_runner/guest and tests/task_runner/image.
"""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from collections.abc import Iterable
from typing import Any

import grpc

from axis_eval.execute.guest import guest_pb2 as pb

PROCESS = "/ateenv.v1alpha.ProcessService/"
FILES = "/ateenv.v1alpha.FileSystemService/"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_get(url: str, timeout: float = 2.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return int(resp.status), resp.read()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read()


class GuestClient:
    """The seven guest methods, as ``ax``'s Go client calls them (full method names)."""

    def __init__(self, channel: grpc.Channel) -> None:
        def uu(name: str, req: Any, resp: Any) -> Any:
            return channel.unary_unary(
                name,
                request_serializer=req.SerializeToString,
                response_deserializer=resp.FromString,
            )

        def us(name: str, req: Any, resp: Any) -> Any:
            return channel.unary_stream(
                name,
                request_serializer=req.SerializeToString,
                response_deserializer=resp.FromString,
            )

        def su(name: str, req: Any, resp: Any) -> Any:
            return channel.stream_unary(
                name,
                request_serializer=req.SerializeToString,
                response_deserializer=resp.FromString,
            )

        self.start = uu(PROCESS + "StartProcess", pb.StartProcessRequest, pb.Process)
        self.get = uu(PROCESS + "GetProcess", pb.GetProcessRequest, pb.Process)
        self.output = us(
            PROCESS + "StreamProcessOutput", pb.StreamProcessOutputRequest, pb.ProcessOutput
        )
        self.write_input = su(
            PROCESS + "WriteProcessInput", pb.WriteProcessInputRequest, pb.WriteProcessInputResponse
        )
        self.signal = uu(PROCESS + "SignalProcess", pb.SignalProcessRequest, pb.Process)
        self.read_file = us(FILES + "ReadFile", pb.ReadFileRequest, pb.ReadFileResponse)
        self.write_file = su(FILES + "WriteFile", pb.WriteFileRequest, pb.WriteFileResponse)

    def run(
        self, command: list[str], *, stdin: bytes | None = None, timeout: float = 20, **kw: Any
    ) -> tuple[bytes, bytes, pb.Process]:
        """Start, feed stdin, follow the output to the exit message (like ``ax ssh``)."""
        proc = self.start(
            pb.StartProcessRequest(command=command, stdin=stdin is not None, **kw), timeout=timeout
        )
        if stdin is not None:
            self.write_input(
                iter(
                    [
                        pb.WriteProcessInputRequest(process_id=proc.process_id, data=stdin),
                        pb.WriteProcessInputRequest(close=True),
                    ]
                ),
                timeout=timeout,
            )
        return self.collect(proc.process_id, timeout=timeout)

    def collect(
        self, process_id: str, *, follow: bool = True, timeout: float = 20, **offsets: int
    ) -> tuple[bytes, bytes, pb.Process]:
        out, err, exit_msg = b"", b"", pb.Process()
        request = pb.StreamProcessOutputRequest(process_id=process_id, follow=follow, **offsets)
        for msg in self.output(request, timeout=timeout):
            kind = msg.WhichOneof("output")
            if kind == "stdout":
                out += msg.stdout
            elif kind == "stderr":
                err += msg.stderr
            elif kind == "exit":
                exit_msg = msg.exit
        return out, err, exit_msg

    def write(self, path: str, chunks: Iterable[bytes], **first: Any) -> int:
        messages = [pb.WriteFileRequest(path=path, **first)]
        messages += [pb.WriteFileRequest(chunk=c) for c in chunks]
        return int(self.write_file(iter(messages), timeout=20).bytes_written)

    def read(self, path: str, mode: int = 0) -> bytes:
        return b"".join(
            m.chunk for m in self.read_file(pb.ReadFileRequest(path=path, mode=mode), timeout=20)
        )
