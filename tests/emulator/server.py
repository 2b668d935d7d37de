"""hookgate's local AWS: moto's server on loopback, made safe for concurrency tests.

Why a wrapper and not `moto_server`:

* moto 5.2.5's DynamoDB is not atomic under concurrent requests: 16 threads doing
  the same conditional put produced two winners in 4 of 7 runs on this machine.
  Requests whose X-Amz-Target starts with "DynamoDB" are therefore served one at
  a time under one lock, as DynamoDB's per-item atomicity promises. SQS (and
  everything else) stays concurrent, so long polls do not block writes.
  A DynamoDB request whose client hung up while it waited for the lock is not
  served (`SerializeDynamoDB`).
* moto 5.2.5's SQS is not safe under concurrent requests either: two receives
  moved one message to the DLQ twice (the second answered 500, `ValueError:
  list.remove(x): x not in list`). One queue's receives, deletes, visibility
  changes and sends are serialised on that queue, a long poll waiting outside
  the lock (`serialize_queues`; tests/emulator/test_server.py, `make emulator-check`).
* moto's dispatcher looks each request's backend up anew, listing its package
  directory under a lock every request takes; its UpdateItem parses the
  expression twice. Both answers are remembered (`Dispatcher`,
  `remember_update_expressions`): on a busy machine the lookup's ~150 stat
  calls each waited for the GIL, and every request behind them.
* Port 0 picks a free port; the chosen one is printed as the first line,
  `listening 127.0.0.1:PORT`, for the harness to read.
* `GET /_hookgate/requests` answers how many requests it served, per client
  app (the `app/NAME` the AWS SDK puts in its User-Agent) and operation
  (`requests`), so `make demo` can state AWS requests per delivery as AWS
  would bill them. An app named `NAME.tag` is counted apart, with the read
  units of its DynamoDB reads (`read_units`, computed from the items
  returned: `read_units()` says how), and is NAME in the call log, so a
  test meters its own calls under its function's policy. It also answers
  the `seconds` this server took per app and operation (a long poll's wait
  included) and, under `dynamodb`, the seconds requests waited for the
  DynamoDB lock and how many it did not serve because their client had hung
  up (`abandoned`): the emulator's own share of the demo's latency.
* The server exits when its standard input closes, so it never outlives the
  test process or `make` recipe that started it, even after a crash.
* `POST /_hookgate/faults` makes the next DynamoDB write of an operation on
  a table commit and then answer 500 (`LoseAnswers`): the SDK's retry of a
  committed conditional write, for the tests. With `hold_ms` the 500 comes
  that much later, outside the DynamoDB lock, so other requests (another
  delivery of the same event) are served between the write and its retry.
* CloudWatch's DescribeAlarms, PutMetricData and GetMetricData are answered
  in Smithy RPC v2 CBOR, the protocol the Rust SDK speaks and moto does not
  (`CloudWatchCbor`).
* With `HOOKGATE_CALL_LOG=PATH` every request is appended to PATH as one JSON
  line, `{"app": "ingress", "action": "dynamodb:PutItem", "resources":
  ["arn:aws:dynamodb:us-east-1:123456789012:table/NAME"]}`: the IAM action the
  request needs and the ARNs it is authorized against, for `make iam-check`
  (tests/iam-check). A CloudFormation call is on its stack,
  `arn:aws:cloudformation:REGION:ACCOUNT:stack/NAME/*`; a CloudWatch Logs call
  on its log group, `…:log-group:NAME`, or stream,
  `…:log-group:NAME:log-stream:S` (CreateLogStream, PutLogEvents,
  GetLogEvents); a call that names neither (DescribeLogGroups, ListStacks) on
  `*`. One write(2) per line on an O_APPEND descriptor, so the emulators of
  concurrent test binaries can share one file.

moto never expires TTL items; the inbox's conditional put copes with that
(`attribute_not_exists(pk) OR expires_at < :now`).
"""

import argparse
import base64
import datetime
import gzip
import io
import json
import os
import re
import socket
import sys
import threading
import time
from urllib.parse import parse_qs, unquote

import cbor2
from moto.cloudwatch.models import cloudwatch_backends
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import WSGIRequestHandler, make_server


class SerializeDynamoDB:
    """WSGI middleware: one DynamoDB request at a time, the rest untouched.

    A request whose client hung up while it waited for the lock (the SDK
    closes the connection when an attempt times out, and tries again) is
    not served: behind a backlog, serving it would only lengthen the wait
    of the attempt that replaced it, and commit a write its client has given
    up on. AWS may or may not have run such a request; not running it is
    one of the outcomes a client must expect. Counted as `abandoned`."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()
        self.abandoned = 0
        self.waited = 0.0  # seconds spent waiting for the lock, all requests together

    def __call__(self, environ, start_response):
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if not target.startswith("DynamoDB"):
            return self.app(environ, start_response)
        asked = time.perf_counter()
        with self.lock:
            self.waited += time.perf_counter() - asked
            if hung_up(environ):
                self.abandoned += 1
                start_response("503 Service Unavailable", [("Content-Type", "application/x-amz-json-1.0")])
                return [b'{"__type":"com.amazonaws.dynamodb.v20120810#ServiceUnavailable",'
                        b'"message":"the client hung up before it was served"}']
            # Consume the whole response inside the lock: moto may build it lazily.
            return list(self.app(environ, start_response))


def hung_up(environ):
    """Whether the request's client closed its connection: a peek that
    finds the end of the stream (a waiting client sends nothing more)."""
    connection = environ.get("werkzeug.socket")
    if connection is None:
        return False
    try:
        return connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


class Dispatcher(DomainDispatcherApplication):
    """moto's dispatcher with each host's backend found once.

    moto 5.2.5 looks the backend up for every request, under a lock every
    request takes: it lists moto's package directory (one stat per service,
    about 150) and matches the services' URL patterns. Each stat gives up
    the GIL and must win it back, which on a busy machine (every core taken
    by a build) can wait a switch interval each time: the lookup, and every
    request queued behind its lock, slowed with the machine's load. The
    answer depends on the host only, so it is remembered."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.found = {}

    def get_backend_for_host(self, host):
        # Called under self.lock (moto's get_application).
        if host not in self.found:
            self.found[host] = super().get_backend_for_host(host)
        return self.found[host]


def serialize_queues():
    """One queue's receives, deletes, visibility changes and sends, one at a
    time; a long poll waits outside the lock.

    moto 5.2.5 reads and rewrites a queue's message list unlocked: two
    receives could both move one message to the DLQ (the second answered
    500, `ValueError: list.remove(x): x not in list`, and the DLQ held it
    twice), both hand out one message, or a delete drop a message sent
    meanwhile. Each pass of a receive, each delete, visibility change, send
    (the DLQ's too) and purge now holds the queue's own lock (moto's
    `_messages_lock`, a reentrant Condition); between passes a long poll
    waits on that Condition with the lock released, woken by a send, and
    every 0.2 s for a message whose visibility ran out, so long polls stay
    concurrent with everything else."""
    from moto.sqs.models import Queue, SQSBackend

    receive, delete = SQSBackend.receive_message, Queue.delete_message
    change, add, purge = SQSBackend.change_message_visibility, Queue.add_message, SQSBackend.purge_queue

    def receive_message(self, queue_name, count, wait_seconds_timeout, visibility_timeout,
                        message_attribute_names=None):
        queue = self.get_queue(queue_name)
        ends = time.monotonic() + (wait_seconds_timeout or 0)
        with queue._messages_lock:
            while True:
                # One pass, no wait: moto's loop breaks after a pass when the wait is 0.
                result = receive(self, queue_name, count, 0, visibility_timeout, message_attribute_names)
                left = ends - time.monotonic()
                if result or left <= 0:
                    return result
                queue._messages_lock.wait(min(left, 0.2))  # releases the lock while it waits

    def delete_message(self, receipt_handle):
        with self._messages_lock:
            return delete(self, receipt_handle)

    def change_message_visibility(self, queue_name, receipt_handle, visibility_timeout):
        with self.get_queue(queue_name)._messages_lock:
            return change(self, queue_name, receipt_handle, visibility_timeout)

    def add_message(self, message):
        with self._messages_lock:
            return add(self, message)

    def purge_queue(self, queue_name):
        with self.get_queue(queue_name)._messages_lock:
            return purge(self, queue_name)

    SQSBackend.receive_message = receive_message
    Queue.delete_message = delete_message
    SQSBackend.change_message_visibility = change_message_visibility
    Queue.add_message = add_message
    SQSBackend.purge_queue = purge_queue


def remember_update_expressions():
    """Each UpdateExpression parsed once.

    moto 5.2.5 parses an UpdateItem's expression twice per request (the
    request's checks, then the update), under the DynamoDB lock, and its
    parser is slow: for the ingress's upsert (ten attributes set if absent,
    the tokens, a count) the two parses were about a fifth of the request's
    time. An expression's tree depends on its text only, and moto never
    changes it (its Validator works on a deep copy), so the tree of each
    text is kept."""
    from moto.dynamodb.parsing import expressions

    parse = expressions.UpdateExpressionParser.make.__func__
    trees = {}
    lock = threading.Lock()

    def make(cls, expression_str):
        with lock:
            tree = trees.get(expression_str)
        if tree is None:
            tree = parse(cls, expression_str)
            with lock:
                if len(trees) < 1024:
                    trees[expression_str] = tree
        return tree

    expressions.UpdateExpressionParser.make = classmethod(make)


APP = re.compile(r"\bapp/([^ ]+)")


def app_of(environ):
    """The client app: the `app/NAME` the AWS SDK puts in its User-Agent."""
    agent = environ.get("HTTP_X_AMZ_USER_AGENT", "") + " " + environ.get("HTTP_USER_AGENT", "")
    match = APP.search(agent)
    return match.group(1) if match else "other"


# DynamoDB's reads, whose read units CountRequests computes.
DYNAMODB_READS = {"GetItem", "BatchGetItem", "Query", "Scan"}
READ_UNIT_BYTES = 4096


def number_size(text):
    """A number's stored size: 1 byte per two significant digits, plus 1."""
    digits = text.lstrip("-").replace(".", "").lstrip("0").rstrip("0") or "0"
    return (len(digits) + 1) // 2 + 1


def value_size(value):
    """An attribute value's size as DynamoDB bills it (its item-size rules)."""
    (kind, v), = value.items()
    if kind == "S":
        return len(v.encode())
    if kind == "N":
        return number_size(v)
    if kind == "B":
        return len(base64.b64decode(v))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode()) for s in v)
    if kind == "NS":
        return sum(number_size(n) for n in v)
    if kind == "BS":
        return sum(len(base64.b64decode(b)) for b in v)
    if kind == "L":
        return 3 + sum(1 + value_size(e) for e in v)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(e) for k, e in v.items())
    return 0


def item_size(item):
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def read_units(op, request, answer):
    """The read request units one DynamoDB read consumes, from the items it
    returned, as on-demand capacity bills them: a Query or Scan the size of
    its items together rounded up to 4 KB (one unit at least), each item of
    a GetItem or BatchGetItem rounded up on its own (a missing one still
    one); a unit per 4 KB strongly consistent, half that eventually. Items
    a filter expression discarded were read too but are not in the answer:
    this counts only what was returned. So does a projection: a Query of an
    index or a read with a ProjectionExpression is billed for the whole
    index entry or item, and counted here for the attributes returned."""
    def units(size, consistent):
        chunks = max(1, -(-size // READ_UNIT_BYTES))
        return chunks if consistent else chunks / 2

    if op in ("Query", "Scan"):
        size = sum(item_size(i) for i in answer.get("Items", []))
        return units(size, request.get("ConsistentRead", False))
    if op == "GetItem":
        return units(item_size(answer.get("Item", {})), request.get("ConsistentRead", False))
    total = 0
    for table, keys in request.get("RequestItems", {}).items():
        consistent = keys.get("ConsistentRead", False)
        found = answer.get("Responses", {}).get(table, [])
        total += sum(units(item_size(i), consistent) for i in found)
        total += units(0, consistent) * (len(keys.get("Keys", [])) - len(found)
                                         - len(answer.get("UnprocessedKeys", {}).get(table, {}).get("Keys", [])))
    return total


class CountRequests:
    """WSGI middleware: counts requests per client app and operation, and the
    read units of the DynamoDB reads of each app metered apart (`NAME.tag`,
    `read_units`)."""

    def __init__(self, app, serialized=None):
        self.app = app
        self.serialized = serialized  # the SerializeDynamoDB inside, for its figures
        self.lock = threading.Lock()
        self.counts = {}
        self.units = {}
        self.seconds = {}

    @staticmethod
    def operation(environ):
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if target:
            return target.rsplit(".", 1)[-1]
        path = environ.get("PATH_INFO", "")
        if path.startswith("/service/") and "/operation/" in path:
            return path.rsplit("/", 1)[-1]  # Smithy RPC v2 CBOR
        # REST protocols (Lambda): the method and the path's first segments.
        path = path.split("/")[1:3]
        return environ.get("REQUEST_METHOD", "") + " /" + "/".join(path)

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") == "/_hookgate/requests":
            with self.lock:
                figures = {"requests": self.counts, "read_units": self.units, "seconds": self.seconds}
                if self.serialized:
                    figures["dynamodb"] = {"abandoned": self.serialized.abandoned,
                                           "lock_wait_seconds": round(self.serialized.waited, 3)}
                body = json.dumps(figures).encode()
            start_response("200 OK", [("Content-Type", "application/json")])
            return [body]
        app = app_of(environ)
        op = self.operation(environ)
        with self.lock:
            per_app = self.counts.setdefault(app, {})
            per_app[op] = per_app.get(op, 0) + 1
        started = time.perf_counter()
        try:
            return self.serve(environ, start_response, app, op)
        finally:
            # The time this server took for the request (moto builds its
            # answers whole; a long poll's wait included), per app and operation.
            took = time.perf_counter() - started
            with self.lock:
                per_app = self.seconds.setdefault(app, {})
                per_app[op] = per_app.get(op, 0.0) + took

    def serve(self, environ, start_response, app, op):
        # Only a client metered apart (`NAME.tag`) has its reads sized: the
        # other requests are served as they come.
        if ("." not in app or op not in DYNAMODB_READS
                or not environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB")):
            return self.app(environ, start_response)
        request = json_body(RecordCalls.read_body(environ))
        status = []

        def started(code, headers, *rest):
            status.append(code)
            return start_response(code, headers, *rest)

        answer = b"".join(self.app(environ, started))
        if status and status[0].startswith("200"):
            try:
                units = read_units(op, request, json.loads(answer))
            except (ValueError, KeyError, TypeError, AttributeError) as error:
                print(f"read units: {error!r}", file=sys.stderr, flush=True)
                units = 0
            with self.lock:
                self.units[app] = self.units.get(app, 0) + units
        return [answer]


ACCOUNT = "123456789012"
REGION = "us-east-1"
# Credential scope service (SigV4) or X-Amz-Target prefix -> IAM prefix.
SCOPE_PREFIX = {"monitoring": "cloudwatch", "execute-api": "execute-api"}
TARGET_PREFIX = {
    "DynamoDB_20120810": "dynamodb",
    "DynamoDBStreams_20120810": "dynamodb",
    "AmazonSQS": "sqs",
    "AWSEvents": "events",
    "AmazonSSM": "ssm",
    "secretsmanager": "secretsmanager",
    "GraniteServiceVersion20100801": "cloudwatch",
    "AWSSecurityTokenServiceV20110615": "sts",
    "Logs_20140328": "logs",
}
SCOPE = re.compile(r"Credential=[^/]+/\d{8}/[^/]+/([^/]+)/aws4_request")
# Batch APIs are authorized as their single-message actions.
SQS_ACTION = {
    "SendMessageBatch": "SendMessage",
    "DeleteMessageBatch": "DeleteMessage",
    "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
}
# DynamoDB transactions have no IAM action of their own: each item is
# authorized as the single-item action.
TRANSACT_ACTION = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}


def arn(service, resource):
    return f"arn:aws:{service}:{REGION}:{ACCOUNT}:{resource}"


def table_arn(name, index=None):
    if name.startswith("arn:"):
        base = name
    else:
        base = arn("dynamodb", f"table/{name}")
    return f"{base}/index/{index}" if index else base


def queue_arn(url_or_name):
    if url_or_name.startswith("arn:"):
        return url_or_name
    name = url_or_name.rstrip("/").rsplit("/", 1)[-1]
    return arn("sqs", name)


def bus_arn(name):
    name = name or "default"
    return name if name.startswith("arn:") else arn("events", f"event-bus/{name}")


def rule_arn(name, bus):
    if name.startswith("arn:"):
        return name
    if bus and bus != "default":
        bus = bus.rsplit("/", 1)[-1]
        return arn("events", f"rule/{bus}/{name}")
    return arn("events", f"rule/{name}")


def parameter_arn(name):
    return name if name.startswith("arn:") else arn("ssm", "parameter/" + name.lstrip("/"))


def secret_arn(name):
    return name if name.startswith("arn:") else arn("secretsmanager", f"secret:{name}")


def function_arn(name):
    name = unquote(name)
    if name.startswith("arn:"):
        return name
    if ":" in name:  # ACCOUNT:function:NAME partial ARNs, or NAME:QUALIFIER
        return arn("lambda", "function:" + name.rsplit("function:", 1)[-1])
    return arn("lambda", f"function:{name}")


def dynamodb_calls(op, body):
    """[(IAM action, [ARNs])] for one DynamoDB request."""
    if op in ("BatchGetItem", "BatchWriteItem"):
        return [(op, [table_arn(t) for t in body.get("RequestItems", {})])]
    if op in ("TransactWriteItems", "TransactGetItems"):
        per_action = {}
        for item in body.get("TransactItems", []):
            for kind, spec in item.items():
                action = TRANSACT_ACTION.get(kind, kind)
                arns = per_action.setdefault(action, [])
                target = table_arn(spec.get("TableName", ""))
                if target not in arns:
                    arns.append(target)
        return list(per_action.items())
    if op in ("ListTables", "DescribeLimits", "DescribeEndpoints"):
        return [(op, ["*"])]
    name = body.get("TableName") or body.get("TableArn") or body.get("ResourceArn")
    if not name:
        return [(op, [])]
    return [(op, [table_arn(name, body.get("IndexName"))])]


def sqs_calls(op, params, path):
    """params: the JSON body or the query-protocol form (single values)."""
    action = SQS_ACTION.get(op, op)
    url = params.get("QueueUrl")
    if not url and params.get("QueueName"):
        url = params["QueueName"]
    if not url and path.strip("/").count("/") == 1:  # query protocol: POST /ACCOUNT/NAME
        url = path
    if op == "ListQueues":
        return [(action, ["*"])]
    return [(action, [queue_arn(url)] if url else [])]


def events_calls(op, body):
    if op == "PutEvents":
        arns = []
        for entry in body.get("Entries", []):
            target = bus_arn(entry.get("EventBusName"))
            if target not in arns:
                arns.append(target)
        return [(op, arns or [bus_arn(None)])]
    if op in ("ListTargetsByRule", "PutTargets", "RemoveTargets"):
        return [(op, [rule_arn(body.get("Rule", ""), body.get("EventBusName"))])]
    if op in ("DescribeRule", "PutRule", "DeleteRule", "EnableRule", "DisableRule"):
        return [(op, [rule_arn(body.get("Name", ""), body.get("EventBusName"))])]
    if op in ("DescribeEventBus", "CreateEventBus", "DeleteEventBus"):
        return [(op, [bus_arn(body.get("Name"))])]
    if op == "ListRules":
        return [(op, ["*"])]
    return [(op, [])]


def ssm_calls(op, body):
    if op == "DescribeParameters":  # takes no resource: authorized on "*"
        return [(op, ["*"])]
    if op == "GetParameters":
        return [(op, [parameter_arn(n) for n in body.get("Names", [])])]
    if op == "GetParametersByPath":
        return [(op, [parameter_arn(body.get("Path", ""))])]
    if "Name" in body:
        return [(op, [parameter_arn(body["Name"])])]
    return [(op, [])]


def stack_arn(name):
    """A stack by name (any stack of that name: its id is not known) or by id."""
    return name if name.startswith("arn:") else arn("cloudformation", f"stack/{name}/*")


def cloudformation_calls(op, params):
    """A stack's call (DescribeStacks, CreateStack, …) on the stack it names;
    the rest (ListStacks, ValidateTemplate, DescribeStacks of every stack) on *."""
    name = params.get("StackName")
    return [(op, [stack_arn(name)] if name else ["*"])]


def log_group_arn(name, stream=None):
    """A log group (a name, or an ARN with or without the trailing `:*`), or one of its streams."""
    if name.startswith("arn:"):
        base = name[:-2] if name.endswith(":*") else name
    else:
        base = arn("logs", f"log-group:{name}")
    return base if stream is None else f"{base}:log-stream:{stream}"


# CloudWatch Logs actions authorized on a log stream; the rest that name a
# log group on the group.
LOG_STREAM_ACTIONS = {"CreateLogStream", "DeleteLogStream", "PutLogEvents", "GetLogEvents"}


def logs_calls(op, body):
    groups = [g for g in (body.get("logGroupName"), body.get("logGroupIdentifier"), body.get("resourceArn"))
              if isinstance(g, str) and g]
    groups += [g for key in ("logGroupNames", "logGroupIdentifiers") for g in body.get(key) or []]
    if not groups:  # DescribeLogGroups, DescribeQueries, …
        return [(op, ["*"])]
    if op in LOG_STREAM_ACTIONS and body.get("logStreamName"):
        return [(op, [log_group_arn(groups[0], body["logStreamName"])])]
    return [(op, [log_group_arn(g) for g in groups])]


def secrets_calls(op, body):
    if op == "CreateSecret" and "Name" in body:
        return [(op, [secret_arn(body["Name"])])]
    if "SecretId" in body:
        return [(op, [secret_arn(body["SecretId"])])]
    return [(op, ["*"] if op in ("ListSecrets", "GetRandomPassword") else [])]


# Lambda's REST API: (method, path after the version, ...) -> IAM action.
LAMBDA_FUNCTION_OPS = {
    ("GET", ""): "GetFunction",
    ("DELETE", ""): "DeleteFunction",
    ("GET", "configuration"): "GetFunctionConfiguration",
    ("PUT", "configuration"): "UpdateFunctionConfiguration",
    ("PUT", "code"): "UpdateFunctionCode",
    ("POST", "invocations"): "InvokeFunction",
    ("POST", "invoke-async"): "InvokeAsync",
    ("GET", "policy"): "GetPolicy",
    ("POST", "policy"): "AddPermission",
    ("GET", "event-invoke-config"): "GetFunctionEventInvokeConfig",
    ("PUT", "event-invoke-config"): "PutFunctionEventInvokeConfig",
    ("POST", "event-invoke-config"): "UpdateFunctionEventInvokeConfig",
    ("DELETE", "event-invoke-config"): "DeleteFunctionEventInvokeConfig",
    ("GET", "concurrency"): "GetFunctionConcurrency",
    ("PUT", "concurrency"): "PutFunctionConcurrency",
    ("GET", "versions"): "ListVersionsByFunction",
    ("POST", "versions"): "PublishVersion",
    ("GET", "aliases"): "ListAliases",
    ("GET", "url"): "GetFunctionUrlConfig",
}


def lambda_calls(method, path):
    parts = [unquote(p) for p in path.strip("/").split("/")]
    if len(parts) >= 2 and parts[1] == "functions":
        if len(parts) == 2:
            return [("CreateFunction" if method == "POST" else "ListFunctions", ["*"])]
        rest = "/".join(parts[3:])
        if rest.startswith("policy/") and method == "DELETE":
            return [("RemovePermission", [function_arn(parts[2])])]
        op = LAMBDA_FUNCTION_OPS.get((method, rest))
        if op is None:
            op = f"{method} /{'/'.join(parts[1:2] + parts[3:])}"
        return [(op, [function_arn(parts[2])])]
    if len(parts) >= 2 and parts[1] == "event-source-mappings":
        if len(parts) == 2 or not parts[2]:
            return [("ListEventSourceMappings" if method == "GET" else "CreateEventSourceMapping",
                     ["*"])]
        op = {"GET": "GetEventSourceMapping", "PUT": "UpdateEventSourceMapping",
              "DELETE": "DeleteEventSourceMapping"}.get(method, method)
        return [(op, [arn("lambda", f"event-source-mapping:{parts[2]}")])]
    return [(f"{method} /{'/'.join(parts[1:])}", [])]


def json_body(body):
    try:
        value = json.loads(body or b"{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def form_body(body, query):
    form = parse_qs(query or "")
    try:
        form.update(parse_qs(body.decode()))
    except UnicodeDecodeError:
        pass
    return {k: v[0] for k, v in form.items()}


def describe(environ, body):
    """The IAM calls one request needs: [("prefix:Action", [ARNs])]."""
    path = environ.get("PATH_INFO", "")
    method = environ.get("REQUEST_METHOD", "")
    if path.startswith("/_hookgate/"):
        return [(f"hookgate-emulator:{method} {path}", [])]
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    scope = SCOPE.search(environ.get("HTTP_AUTHORIZATION", ""))
    service = scope.group(1) if scope else ""
    if target:
        prefix, _, op = target.rpartition(".")
        service = TARGET_PREFIX.get(prefix, service or prefix.lower())
        params = json_body(body)
    elif path.startswith("/service/") and "/operation/" in path:
        # Smithy RPC v2 (CBOR): /service/SERVICE/operation/OP.
        prefix = path.split("/")[2]
        op = path.rsplit("/", 1)[-1]
        service = TARGET_PREFIX.get(prefix, service or prefix.lower())
        params = {}
    elif service == "lambda" or re.match(r"^/20\d\d-\d\d-\d\d/", path):
        return [(f"lambda:{op}", arns) for op, arns in lambda_calls(method, path)]
    else:
        params = form_body(body, environ.get("QUERY_STRING"))
        op = params.get("Action", f"{method} {path}")
        if not service:
            service = "sqs" if "QueueUrl" in params or "QueueName" in params else "unknown"
    service = SCOPE_PREFIX.get(service, service)
    if service == "dynamodb":
        calls = dynamodb_calls(op, params)
    elif service == "sqs":
        calls = sqs_calls(op, params, path)
    elif service == "events":
        calls = events_calls(op, params)
    elif service == "ssm":
        calls = ssm_calls(op, params)
    elif service == "secretsmanager":
        calls = secrets_calls(op, params)
    elif service == "cloudformation":
        calls = cloudformation_calls(op, params)
    elif service == "logs":
        calls = logs_calls(op, params)
    elif service in ("cloudwatch", "sts"):
        calls = [(op, ["*"])]
    else:
        calls = [(op, [])]
    return [(f"{service}:{action}", arns) for action, arns in calls]


class RecordCalls:
    """WSGI middleware: appends each request's IAM action and resource ARNs to
    the file named by HOOKGATE_CALL_LOG, one JSON line per call."""

    def __init__(self, app, path):
        self.app = app
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def __call__(self, environ, start_response):
        try:
            body = self.read_body(environ)
            # `NAME.tag` is NAME's client, counted apart (a test's meter).
            app = app_of(environ).split(".", 1)[0]
            lines = []
            calls = describe(environ, body)
            for action, resources in calls:
                line = {"app": app, "action": action, "resources": resources}
                if len(calls) > 1:  # a transaction: name the API it came from
                    line["operation"] = environ.get("HTTP_X_AMZ_TARGET", "").rsplit(".", 1)[-1]
                lines.append(json.dumps(line, separators=(",", ":")) + "\n")
            # One write(2) for the request's lines: O_APPEND keeps it whole.
            os.write(self.fd, "".join(lines).encode())
        except Exception as error:  # never break a request because of the log
            print(f"call log: {error!r}", file=sys.stderr, flush=True)
        return self.app(environ, start_response)

    @staticmethod
    def read_body(environ):
        """Reads the request body and puts it back for moto."""
        stream = environ.get("wsgi.input")
        if stream is None:
            return b""
        length = environ.get("CONTENT_LENGTH")
        if length:
            body = stream.read(int(length))
        elif environ.get("wsgi.input_terminated"):
            body = stream.read()
        else:
            body = b""
        environ["wsgi.input"] = io.BytesIO(body)
        return body


class CloudWatchCbor:
    """WSGI middleware: the CloudWatch calls the Rust code makes, in the
    protocol the Rust SDK speaks.

    aws-sdk-cloudwatch sends Smithy RPC v2 CBOR (`POST /service/
    GraniteServiceVersion20100801/operation/DescribeAlarms`, header
    `smithy-protocol: rpc-v2-cbor`); moto 5.2.5 only parses the query
    protocol, so such a request answers 500. This answers, from moto's own
    CloudWatch backend, encoded as CBOR:
    - DescribeAlarms (`hookgate doctor`, the console's alarms). Alarms are
      created through the query protocol (boto3, `scripts/provision.py`);
    - PutMetricData (the local runner and the tests send the functions' EMF
      values with it, as CloudWatch Logs extracts them on AWS). The SDK
      gzips a body above 10 KB (`Content-Encoding: gzip`);
    - GetMetricData with MetricStat queries (the overview's figures): Sum
      queries summed here (`metric_sums`), others by moto. moto compares
      naive UTC times and CBOR's decode timezone-aware, so every time is
      made naive UTC on the way in and tagged epoch seconds (CBOR tag 1) on
      the way out. moto has no percentiles, ignores the namespace when a
      query names dimensions, and truncates the end time to the second.
    Other CBOR operations get a clear 501.
    """

    PATH = "/service/GraniteServiceVersion20100801/operation/"

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if environ.get("HTTP_SMITHY_PROTOCOL") != "rpc-v2-cbor" or not path.startswith(self.PATH):
            return self.app(environ, start_response)
        operation = path[len(self.PATH):]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        if "gzip" in environ.get("HTTP_CONTENT_ENCODING", ""):
            body = gzip.decompress(body)
        request = cbor2.loads(body) if body else {}
        scope = re.search(r"Credential=[^/]+/[^/]+/([^/]+)/", environ.get("HTTP_AUTHORIZATION", ""))
        backend = cloudwatch_backends["123456789012"][scope.group(1) if scope else "us-east-1"]
        try:
            if operation == "DescribeAlarms":
                prefix = request.get("AlarmNamePrefix", "")
                alarms = [a for a in backend.describe_alarms() if a.name.startswith(prefix) and not a.rule]
                status, answer = "200 OK", {"MetricAlarms": [self.alarm(a) for a in alarms], "CompositeAlarms": []}
            elif operation == "PutMetricData":
                data = [dict(d, Timestamp=naive(d["Timestamp"])) if "Timestamp" in d else d
                        for d in request.get("MetricData", [])]
                backend.put_metric_data(request["Namespace"], data)
                status, answer = "200 OK", {}
            elif operation == "GetMetricData":
                start, end = naive(request["StartTime"]), naive(request["EndTime"])
                scan_by = request.get("ScanBy", "TimestampAscending")
                queries = request["MetricDataQueries"]
                results = (metric_sums(backend, queries, start, end, scan_by)
                           or backend.get_metric_data(queries, start, end, scan_by))
                status, answer = "200 OK", {"MetricDataResults": [{
                    "Id": r["id"], "Label": r["label"], "StatusCode": r["status_code"],
                    "Timestamps": [epoch(t) for t in r["timestamps"]],
                    "Values": [float(v) for v in r["values"]],
                } for r in results], "Messages": []}
            else:
                status, answer = "501 Not Implemented", {"__type": "NotImplemented", "message": operation}
        except (KeyError, TypeError, ValueError) as error:  # a request without what it needs
            status, answer = "400 Bad Request", {"__type": "InvalidParameterValue", "message": repr(error)}
        except Exception as error:  # moto's own errors keep their status; anything else is ours
            code, kind = getattr(error, "code", None), getattr(error, "error_type", None)
            if isinstance(code, int) and kind:
                status, answer = f"{code} Error", {"__type": kind, "message": getattr(error, "message", str(error))}
            else:
                status, answer = "500 Internal Server Error", {"__type": "InternalFailure", "message": repr(error)}
        start_response(status, [("Content-Type", "application/cbor"), ("smithy-protocol", "rpc-v2-cbor")])
        return [cbor2.dumps(answer)]

    @staticmethod
    def alarm(a):
        fields = {
            "AlarmName": a.name, "AlarmArn": a.alarm_arn, "Namespace": a.namespace,
            "MetricName": a.metric_name, "Statistic": a.statistic, "Period": a.period,
            "EvaluationPeriods": a.evaluation_periods, "Threshold": a.threshold,
            "ComparisonOperator": a.comparison_operator, "StateValue": a.state_value,
            "Dimensions": [{"Name": d.name, "Value": d.value} for d in a.dimensions],
            "AlarmActions": list(a.alarm_actions or []),
        }
        return {k: v for k, v in fields.items() if v is not None}


def metric_sums(backend, queries, start, end, scan_by):
    """GetMetricData's Sum queries, each value read once and bucketed by
    arithmetic: moto's own loop compares every value with every period of
    every query (1,441 periods for a day by the minute), and ignores the
    namespace when a query names dimensions. None (moto answers) when a
    query is not a MetricStat Sum."""
    results = []
    for q in queries:
        stat = q.get("MetricStat")
        if not stat or stat.get("Stat") != "Sum":
            return None
        metric = stat["Metric"]
        dims = sorted((d["Name"], d["Value"]) for d in metric.get("Dimensions", []))
        period = int(stat["Period"])
        sums = {}
        for md in backend.metric_data:
            if (md.namespace != metric["Namespace"] or md.name != metric["MetricName"]
                    or not start <= md.timestamp < end
                    or sorted((d.name, d.value) for d in md.dimensions) != dims):
                continue
            slot = int((md.timestamp - start).total_seconds() // period)
            at = start + datetime.timedelta(seconds=slot * period)
            value = md.value if hasattr(md, "value") else md.sum  # StatisticValues
            sums[at] = sums.get(at, 0.0) + float(value)
        times = sorted(sums, reverse=scan_by == "TimestampDescending")
        results.append({"id": q["Id"], "label": q.get("Label") or q["Id"], "status_code": "Complete",
                        "timestamps": times, "values": [sums[t] for t in times]})
    return results


def naive(t):
    """A CBOR time (tag 1: a timezone-aware datetime) as moto keeps times:
    naive UTC."""
    if isinstance(t, (int, float)):
        return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).replace(tzinfo=None)
    return t.astimezone(datetime.timezone.utc).replace(tzinfo=None) if t.tzinfo else t


def epoch(t):
    """A moto time (naive UTC) as Smithy RPC v2 CBOR sends one: tag 1."""
    aware = t.replace(tzinfo=datetime.timezone.utc) if t.tzinfo is None else t
    return cbor2.CBORTag(1, aware.timestamp())


class LoseAnswers:
    """WSGI middleware: "the write committed, its answer was lost", on demand.

    `POST /_hookgate/faults {"operation": "PutItem", "table": "T", "count": 1}`
    arms it: the next `count` DynamoDB requests of that operation on that
    table are served (the write commits), and then answered 500
    InternalServerError instead, so the SDK retries a write that already
    happened: the case a conditional write must not misread as someone
    else's. With `"hold_ms": N` the 500 is sent N ms after the write, and
    since this middleware runs outside `SerializeDynamoDB`, other DynamoDB
    requests are served meanwhile. With `"commit": false` nothing is
    written: a plain outage of that table. A new fault replaces the one
    armed for the same operation and table (`"count": 0` stops it);
    `DELETE /_hookgate/faults` disarms all.
    """

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()
        self.armed = []  # [operation, table, remaining, commit, hold_ms]

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == "/_hookgate/faults":
            with self.lock:
                if environ.get("REQUEST_METHOD") == "DELETE":
                    self.armed.clear()
                else:
                    fault = json.loads(RecordCalls.read_body(environ) or b"{}")
                    # count 0: stop the faults of that operation and table.
                    self.armed = [f for f in self.armed
                                  if (f[0], f[1]) != (fault["operation"], fault["table"])]
                    self.armed.append([fault["operation"], fault["table"], int(fault.get("count", 1)),
                                       bool(fault.get("commit", True)), int(fault.get("hold_ms", 0))])
            start_response("204 No Content", [])
            return [b""]
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if not target.startswith("DynamoDB") or not self.armed:
            return self.app(environ, start_response)
        operation = target.rsplit(".", 1)[-1]
        table = json.loads(RecordCalls.read_body(environ) or b"{}").get("TableName")
        with self.lock:
            hit = next((f for f in self.armed if f[0] == operation and f[1] == table and f[2] > 0), None)
            if hit:
                hit[2] -= 1
        if not hit:
            return self.app(environ, start_response)
        if hit[3]:
            list(self.app(environ, lambda *args, **kwargs: None))  # committed; the answer is dropped
        if hit[4]:
            time.sleep(hit[4] / 1000)  # the DynamoDB lock is free: others are served meanwhile
        body = json.dumps({"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError",
                           "message": "injected: the write committed, this answer is lost"}).encode()
        start_response("500 Internal Server Error", [("Content-Type", "application/x-amz-json-1.0")])
        return [body]


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
    parser.add_argument("--keep-alive", action="store_true",
                        help="serve with waitress, keeping connections alive as AWS does "
                             "(werkzeug closes each one); `make perf` uses it")
    args = parser.parse_args()

    serialize_queues()
    remember_update_expressions()
    serialized = SerializeDynamoDB(CloudWatchCbor(Dispatcher(create_backend_app)))
    app = CountRequests(LoseAnswers(serialized), serialized)
    if os.environ.get("HOOKGATE_CALL_LOG"):
        app = RecordCalls(app, os.environ["HOOKGATE_CALL_LOG"])
    if args.keep_alive:
        import waitress

        server = waitress.create_server(app, host=args.host, port=args.port, threads=16)
        print(f"listening {args.host}:{server.effective_port}", flush=True)
        if not args.no_stdin_watch:
            threading.Thread(target=lambda: (sys.stdin.buffer.read(), os._exit(0)),
                             daemon=True).start()
        server.run()
        return
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
