"""The Lambda-model benchmark of the ingress (`make perf`).

The release ingress binary runs as Lambda runs it: K instances, each behind
its own minimal Lambda Runtime API on 127.0.0.1 (one invocation at a time per
instance), against the AWS emulator. N Standard Webhooks events are each
delivered DUP times; the copies of one event go to different instances at
the same moment, so duplicates race as they do when a provider retries a
timed-out delivery.

One JSON report (stdout, and --out): CPU ms per delivery (the instances'
user + system time over the burst, from /proc), peak RSS, cold start, the
AWS requests per delivery by operation (the emulator's count of the
ingress's own requests), the DynamoDB write units of the stored items (item
size by DynamoDB's rules, rounded up to 1 KB), answer latency p50/p99,
answers by status and verdict, and the correctness checks: exactly N `new`,
N messages queued, no error. `--smoke` runs a tiny burst on the debug binary
for correctness only (`make test`); timings are never asserted.
"""

import argparse
import base64
import hashlib
import hmac
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import boto3

from lambda_model import RuntimeApi, peak_rss_kib, start_emulator

ROOT = Path(__file__).resolve().parent.parent
# A documented test secret (CONTRIBUTING.md, "Test secrets").
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
TICKS = os.sysconf("SC_CLK_TCK")


def signed_event(n, body):
    msg_id = f"msg_{n}"
    ts = str(int(time.time()))
    key = base64.b64decode(SECRET.removeprefix("whsec_"))
    mac = hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
    path = "/webhooks/standard-webhooks/ws-perf"
    return {
        "version": "2.0",
        "routeKey": "POST /webhooks/{provider}/{workspace}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"content-type": "application/json", "webhook-id": msg_id,
                    "webhook-timestamp": ts,
                    "webhook-signature": "v1," + base64.b64encode(mac).decode()},
        "requestContext": {
            "accountId": "123456789012", "apiId": "perf", "domainName": "perf.example",
            "domainPrefix": "perf", "requestId": f"r{n}",
            "routeKey": "POST /webhooks/{provider}/{workspace}",
            "stage": "$default", "time": "30/Nov/2026:00:00:00 +0000", "timeEpoch": 0,
            "http": {"method": "POST", "path": path, "protocol": "HTTP/1.1",
                     "sourceIp": "127.0.0.1", "userAgent": "perf"},
        },
        "pathParameters": {"provider": "standard-webhooks", "workspace": "ws-perf"},
        "body": body.decode(),
        "isBase64Encoded": False,
    }


# Words of a call transcript: a body made of them compresses about as real
# webhook JSON does (2.3-2.6x at 2 KiB), where a repeated filler would
# compress 20x and flatter the stored size.
WORDS = ("the customer called about their invoice and asked whether the payment "
         "went through yesterday agent confirmed amount account update schedule "
         "follow up next week thanks for calling please hold while I check your "
         "order number shipping address refund policy appointment tomorrow "
         "morning afternoon").split()
ID_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def body_of(n, size):
    """A call-ended webhook body of about `size` bytes, unique per event:
    ids, numbers and a transcript, deterministic in `n`."""
    rng = random.Random(n)

    def rid(prefix, k=14):
        return prefix + "_" + "".join(rng.choice(ID_CHARS) for _ in range(k))

    call = {"id": rid("call", 20), "agent_id": rid("agent"), "customer": rid("cus"),
            "from_number": f"+1415555{n % 10000:04d}", "to_number": "+14155550100",
            "direction": "inbound", "status": "ended",
            "start_timestamp": 1764460700000 + n, "end_timestamp": 1764460800000 + n,
            "disconnection_reason": "user_hangup",
            "metadata": {"crm_contact": rid("ct", 10), "campaign": "winter"},
            "transcript": []}
    event = {"id": rid("evt", 24), "type": "call.ended", "created": 1764460800 + n,
             "data": {"object": call}}
    turns = call["transcript"]
    while len(json.dumps(event)) < size:
        turns.append({"role": rng.choice(["agent", "user"]),
                      "content": " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16)))})
    while len(json.dumps(event)) > size and turns:
        turns.pop()
    return json.dumps(event).encode()


def count_bytes(stream, total):
    """Adds what `stream` yields to total[0] until it closes."""
    while chunk := stream.read1(65536):
        total[0] += len(chunk)


def cpu_ticks(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def item_bytes(item):
    """DynamoDB's item size: attribute names plus values (strings and
    binaries by length, numbers ~ digits / 2 + 1, booleans 1)."""
    size = 0
    for name, value in item.items():
        size += len(name.encode())
        (kind, v), = value.items()
        if kind == "S":
            size += len(v.encode())
        elif kind == "B":
            size += len(v)
        elif kind == "N":
            size += math.ceil(len(v.lstrip("-").replace(".", "")) / 2) + 1
        elif kind == "BOOL":
            size += 1
        elif kind == "SS":
            size += sum(len(s.encode()) for s in v)
    return size


def main():
    parser = argparse.ArgumentParser(description="the ingress under the Lambda model")
    parser.add_argument("--binary", default=str(ROOT / "target/release/ingress"))
    parser.add_argument("--instances", type=int, default=4)
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--dup", type=int, default=3)
    parser.add_argument("--body-bytes", type=int, default=2048)
    parser.add_argument("--out", default=str(ROOT / "target/perf/report.json"))
    parser.add_argument("--smoke", action="store_true",
                        help="a tiny run for correctness only (make test)")
    args = parser.parse_args()
    if args.smoke:
        args.instances, args.events, args.dup = 2, 6, 2

    emulator, endpoint = start_emulator(keep_alive=True)
    aws = dict(endpoint_url=endpoint, region_name="us-east-1",
               aws_access_key_id="test", aws_secret_access_key="test")
    ddb = boto3.client("dynamodb", **aws)
    for table in ("perf-inbox", "perf-triage"):
        ddb.create_table(
            TableName=table, BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}])
    sqs = boto3.client("sqs", **aws)
    queue_url = sqs.create_queue(QueueName="perf-actions")["QueueUrl"]

    config = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    config.write(f"""
[inbox]
table = "perf-inbox"
[queue]
action_queue_url = "{queue_url}"
[triage]
table = "perf-triage"
[workspaces.ws-perf.standard-webhooks]
secrets = ["env:PERF_SECRET"]
""")
    config.close()

    instances = []
    for i in range(args.instances):
        api = RuntimeApi()
        threading.Thread(target=api.serve_forever, daemon=True).start()
        env = dict(os.environ,
                   AWS_LAMBDA_RUNTIME_API=f"127.0.0.1:{api.server_port}",
                   AWS_LAMBDA_FUNCTION_NAME="ingress", AWS_LAMBDA_FUNCTION_VERSION="$LATEST",
                   AWS_LAMBDA_FUNCTION_MEMORY_SIZE="256", AWS_LAMBDA_LOG_STREAM_NAME=f"perf-{i}",
                   AWS_LAMBDA_LOG_GROUP_NAME="/aws/lambda/ingress",
                   AWS_ENDPOINT_URL=endpoint, AWS_REGION="us-east-1",
                   AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test",
                   AWS_SDK_UA_APP_ID="ingress", HOOKGATE_SERVICE="perf",
                   HOOKGATE_CONFIG=config.name, PERF_SECRET=SECRET,
                   RUST_LOG=os.environ.get("PERF_RUST_LOG", "info"))
        spawned = time.perf_counter()
        # Logs at `info`, as deployed (one JSON line and one EMF line per
        # delivery); Lambda would ship them to CloudWatch (billed by the
        # byte), here they are counted and dropped.
        proc = subprocess.Popen([args.binary], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        log_bytes = [0]
        threading.Thread(target=count_bytes, args=(proc.stdout, log_bytes), daemon=True).start()
        while api.first_poll is None:
            if proc.poll() is not None:
                sys.exit(f"ingress exited with {proc.returncode} before serving")
            time.sleep(0.0005)
        instances.append({"api": api, "proc": proc, "log_bytes": log_bytes,
                          "cold_ms": (api.first_poll - spawned) * 1000,
                          "ticks": cpu_ticks(proc.pid)})

    # Each event's copies go to different instances at once: they race.
    bodies = [body_of(n, args.body_bytes) for n in range(args.events)]
    feeders = []
    for i, inst in enumerate(instances):
        work = [(n, copy) for n in range(args.events) for copy in range(args.dup)
                if (n + copy) % args.instances == i]
        feeders.append((inst, work))
    deliveries = args.events * args.dup
    answers = []
    started = time.perf_counter()

    def feed(inst, work):
        api = inst["api"]
        for n, copy in work:
            request_id = f"e{n}-c{copy}"
            api.events.put((request_id, signed_event(n, bodies[n])))
            answers.append(api.answers.get(timeout=60))

    logged_at_start = sum(i["log_bytes"][0] for i in instances)
    threads = [threading.Thread(target=feed, args=f) for f in feeders]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started

    cpu_ms = sum((cpu_ticks(i["proc"].pid) - i["ticks"]) for i in instances) * 1000 / TICKS
    rss = max(peak_rss_kib(i["proc"].pid) for i in instances)
    time.sleep(0.2)  # the last lines through the pipes
    logged = sum(i["log_bytes"][0] for i in instances) - logged_at_start
    for inst in instances:
        inst["proc"].kill()
        inst["proc"].wait()
        inst["api"].shutdown()

    statuses, verdicts, errors, latencies = {}, {}, 0, []
    for _, kind, payload, elapsed in answers:
        latencies.append(elapsed * 1000)
        if kind != "response":
            errors += 1
            continue
        answer = json.loads(payload)
        status = answer.get("statusCode")
        statuses[str(status)] = statuses.get(str(status), 0) + 1
        verdict = json.loads(answer.get("body") or "{}").get("verdict", "-")
        verdicts[verdict] = verdicts.get(verdict, 0) + 1

    counts = json.loads(urllib.request.urlopen(endpoint + "/_hookgate/requests").read())["requests"]
    ingress_requests = counts.get("ingress", {})
    queued = int(sqs.get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"])
        ["Attributes"]["ApproximateNumberOfMessages"])
    items = [item for page in ddb.get_paginator("scan").paginate(TableName="perf-inbox")
             for item in page["Items"]]
    sizes = [item_bytes(item) for item in items]
    emulator.stdin.close()
    emulator.wait()
    os.unlink(config.name)

    quantile = lambda q: statistics.quantiles(latencies, n=100)[q - 1] if len(latencies) > 1 else latencies[0]
    report = {
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                 capture_output=True, text=True).stdout.strip(),
        "machine": f"{os.cpu_count()} cores",
        "binary": os.path.relpath(args.binary, ROOT),
        "instances": args.instances, "events": args.events, "dup": args.dup,
        "body_bytes": args.body_bytes, "deliveries": deliveries,
        "cpu_ms_per_delivery": round(cpu_ms / deliveries, 3),
        "peak_rss_mib": round(rss / 1024, 1),
        "cold_start_ms": {"median": round(statistics.median(i["cold_ms"] for i in instances), 1),
                          "max": round(max(i["cold_ms"] for i in instances), 1)},
        "aws_requests_per_delivery": {op: round(n / deliveries, 3)
                                      for op, n in sorted(ingress_requests.items())},
        "aws_requests_per_delivery_total": round(sum(ingress_requests.values()) / deliveries, 3),
        "inbox_item_bytes": {"median": statistics.median(sizes) if sizes else 0,
                             "max": max(sizes, default=0)},
        # Every upsert, new or repeat, is billed the larger of the item's
        # sizes before and after: the stored size, per delivery.
        "write_units_per_item": math.ceil(max(sizes, default=0) / 1024),
        # The worker's strongly consistent GetItem of the record.
        "read_units_per_item": math.ceil(max(sizes, default=0) / 4096),
        "answer_ms": {"p50": round(quantile(50), 2), "p99": round(quantile(99), 2)},
        "wall_s": round(wall, 2),
        "log_bytes_per_delivery": round(logged / deliveries),
        "statuses": statuses, "verdicts": verdicts, "errors": errors,
        "queued_messages": queued,
    }
    checks = {
        "every delivery answered 202": statuses == {"202": deliveries},
        "exactly one new per event": verdicts.get("new") == args.events,
        "every other copy a duplicate": verdicts.get("duplicate") == deliveries - args.events,
        "one message per event": queued == args.events,
        "one inbox record per event": len(items) == args.events,
        "no invocation error": errors == 0,
    }
    report["checks"] = checks
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    failed = [name for name, ok in checks.items() if not ok]
    if failed:
        sys.exit("perf: failed: " + "; ".join(failed))


if __name__ == "__main__":
    main()
