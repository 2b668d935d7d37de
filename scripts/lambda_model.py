"""The Lambda model shared by `scripts/perf.py` and `scripts/coldstart.py`:
a minimal Lambda Runtime API (the routes lambda_runtime uses), the AWS
emulator, and a process's peak RSS."""

import json
import subprocess
import sys
import time
import queue
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class RuntimeApi(ThreadingHTTPServer):
    """One instance's Lambda Runtime API: `next` hands out one invocation at
    a time; the answer is timed from hand-out to response."""

    daemon_threads = True

    def __init__(self, trace=False):
        super().__init__(("127.0.0.1", 0), Handler)
        # Active tracing: each invocation comes with its X-Ray trace header.
        self.trace = trace
        self.events = queue.Queue()
        self.answers = queue.Queue()
        self.handed_at = {}
        self.first_poll = None

    def handle_error(self, request, client_address):
        # Each run kills its function, whose keep-alive connection then
        # resets: expected, not worth a traceback.
        if isinstance(sys.exc_info()[1], ConnectionResetError):
            return
        super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    # Keep-alive, as Lambda's Runtime API: a runtime client that had to
    # reconnect for every `next` and every answer would be charged for it.
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if not self.path.endswith("/invocation/next"):
            self.send_error(404)
            return
        if self.server.first_poll is None:
            self.server.first_poll = time.perf_counter()
        request_id, event = self.server.events.get()
        body = json.dumps(event).encode()
        self.send_response(200)
        self.send_header("Lambda-Runtime-Aws-Request-Id", request_id)
        self.send_header("Lambda-Runtime-Deadline-Ms", str(int(time.time() * 1000) + 30_000))
        self.send_header("Lambda-Runtime-Invoked-Function-Arn",
                         "arn:aws:lambda:us-east-1:123456789012:function:ingress")
        if self.server.trace:
            self.send_header("Lambda-Runtime-Trace-Id",
                             f"Root=1-{int(time.time()):08x}-{request_id.encode().hex()[:24]:0>24};"
                             "Parent=53995c3f42cd8ad8;Sampled=1")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.server.handed_at[request_id] = time.perf_counter()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        payload = self.rfile.read(length)
        request_id = self.path.split("/invocation/")[1].split("/")[0]
        elapsed = time.perf_counter() - self.server.handed_at.pop(request_id, time.perf_counter())
        kind = "error" if self.path.endswith("/error") else "response"
        self.server.answers.put((request_id, kind, payload, elapsed))
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()


def start_emulator(keep_alive=False):
    """The emulator on a free port (`keep_alive`: served by waitress)."""
    flags = ["--keep-alive"] if keep_alive else []
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/emulator/server.py"), "--port=0", *flags],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    return proc, "http://" + line.removeprefix("listening ")


def peak_rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM")


