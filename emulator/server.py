"""hookgate's local AWS: moto's server on loopback, made safe for concurrency tests.

Why a wrapper and not `moto_server`:

* moto 5.2.5's DynamoDB is not atomic under concurrent requests: 16 threads doing
  the same conditional put produced two winners in 4 of 7 runs on this machine.
  Requests whose X-Amz-Target starts with "DynamoDB" are therefore served one at
  a time under one lock, as DynamoDB's per-item atomicity promises. SQS (and
  everything else) stays concurrent, so long polls do not block writes.
* Port 0 picks a free port; the chosen one is printed as the first line,
  `listening 127.0.0.1:PORT`, for the harness to read.
* `GET /_hookgate/requests` answers how many requests it served, per client
  app (the `app/NAME` the AWS SDK puts in its User-Agent) and operation, so
  `make demo` can state AWS requests per delivery as AWS would bill them.
* The server exits when its standard input closes, so it never outlives the
  test process or `make` recipe that started it, even after a crash.

moto never expires TTL items; the inbox's conditional put copes with that
(`attribute_not_exists(pk) OR expires_at < :now`).
"""

import argparse
import json
import os
import re
import sys
import threading

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import WSGIRequestHandler, make_server


class SerializeDynamoDB:
    """WSGI middleware: one DynamoDB request at a time, the rest untouched."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if not target.startswith("DynamoDB"):
            return self.app(environ, start_response)
        with self.lock:
            # Consume the whole response inside the lock: moto may build it lazily.
            return list(self.app(environ, start_response))


APP = re.compile(r"\bapp/([^ ]+)")


class CountRequests:
    """WSGI middleware: counts requests per client app and operation."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()
        self.counts = {}

    @staticmethod
    def operation(environ):
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if target:
            return target.rsplit(".", 1)[-1]
        # REST protocols (Lambda): the method and the path's first segments.
        path = environ.get("PATH_INFO", "").split("/")[1:3]
        return environ.get("REQUEST_METHOD", "") + " /" + "/".join(path)

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") == "/_hookgate/requests":
            with self.lock:
                body = json.dumps(self.counts).encode()
            start_response("200 OK", [("Content-Type", "application/json")])
            return [body]
        agent = environ.get("HTTP_X_AMZ_USER_AGENT", "") + " " + environ.get("HTTP_USER_AGENT", "")
        match = APP.search(agent)
        app = match.group(1) if match else "other"
        op = self.operation(environ)
        with self.lock:
            per_app = self.counts.setdefault(app, {})
            per_app[op] = per_app.get(op, 0) + 1
        return self.app(environ, start_response)


class QuietHandler(WSGIRequestHandler):
    def log_request(self, *args, **kwargs):
        if os.environ.get("HOOKGATE_EMULATOR_VERBOSE"):
            super().log_request(*args, **kwargs)


def exit_when_stdin_closes(server):
    sys.stdin.buffer.read()
    server.shutdown()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--no-stdin-watch", action="store_true",
                        help="keep running after stdin closes (stop it by PID)")
    args = parser.parse_args()

    app = CountRequests(SerializeDynamoDB(DomainDispatcherApplication(create_backend_app)))
    server = make_server(args.host, args.port, app, threaded=True, request_handler=QuietHandler)
    print(f"listening {args.host}:{server.server_port}", flush=True)
    if not args.no_stdin_watch:
        threading.Thread(target=exit_when_stdin_closes, args=(server,), daemon=True).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
