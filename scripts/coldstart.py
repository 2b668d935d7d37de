"""Cold start and peak memory of the release ingress binary, measured locally.

What it does, all on 127.0.0.1:
  1. starts the AWS emulator (tests/emulator/server.py) and creates the inbox and
     triage tables and an action queue in it (the ingress refuses to start
     without a triage table: it files payload collisions there);
  2. serves a minimal Lambda Runtime API (the two routes the runtime uses:
     GET .../invocation/next and POST .../invocation/{id}/response|error);
  3. starts target/release/ingress RUNS times and measures the time from spawn
     to its first GET .../invocation/next: config load, client construction,
     ready to serve (nothing is fetched over the network at init);
  4. in the last run, feeds a burst of signed API Gateway v2 webhook requests
     one after the other, as Lambda does, checks every answer is 202, and reads
     the process's peak RSS (VmHWM) from /proc.

Prints the median and range of the cold starts and the peak RSS. Run with
`make coldstart` (which builds the release binary and uses the project venv);
`make test` runs it once on the debug binary with a small burst
(`make coldstart-smoke`), for its correctness only, so it cannot rot.
"""

import argparse
import hashlib
import hmac
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import boto3

from lambda_model import RuntimeApi, peak_rss_kib, start_emulator

ROOT = Path(__file__).resolve().parent.parent
SECRET = "key_coldstart_test"


def signed_event(n):
    body = json.dumps({"event": "call_ended", "call": {"call_id": f"cold-{os.getpid()}-{n}"}})
    ts = str(int(time.time() * 1000))
    digest = hmac.new(SECRET.encode(), body.encode() + ts.encode(), hashlib.sha256).hexdigest()
    return {
        "version": "2.0",
        "routeKey": "POST /webhooks/{provider}/{workspace}",
        "rawPath": "/webhooks/retell/ws-cold",
        "rawQueryString": "",
        "headers": {"content-type": "application/json", "x-retell-signature": f"v={ts},d={digest}"},
        "requestContext": {
            "accountId": "123456789012", "apiId": "cold", "domainName": "cold.example",
            "domainPrefix": "cold", "requestId": f"r{n}", "routeKey": "POST /webhooks/{provider}/{workspace}",
            "stage": "$default", "time": "29/Nov/2026:00:00:00 +0000", "timeEpoch": 0,
            "http": {"method": "POST", "path": "/webhooks/retell/ws-cold", "protocol": "HTTP/1.1",
                     "sourceIp": "127.0.0.1", "userAgent": "coldstart"},
        },
        "pathParameters": {"provider": "retell", "workspace": "ws-cold"},
        "body": body,
        "isBase64Encoded": False,
    }


def main():
    parser = argparse.ArgumentParser(description="ingress cold start and peak RSS")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--binary", default=str(ROOT / "target/release/ingress"))
    parser.add_argument("--tracing", action="store_true",
                        help="as with EnableTracing=true: X-Ray's variables set, and each "
                             "invocation handed out with its trace header")
    args = parser.parse_args()

    emulator, endpoint = start_emulator()
    aws = dict(endpoint_url=endpoint, region_name="us-east-1",
               aws_access_key_id="test", aws_secret_access_key="test")
    for table in ("cold-inbox", "cold-triage"):
        boto3.client("dynamodb", **aws).create_table(
            TableName=table, BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}])
    queue_url = boto3.client("sqs", **aws).create_queue(QueueName="cold-actions")["QueueUrl"]

    config = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    config.write(f"""
[inbox]
table = "cold-inbox"
[queue]
action_queue_url = "{queue_url}"
[triage]
table = "cold-triage"
[workspaces.ws-cold.retell]
secrets = ["env:COLD_RETELL_KEY"]
""")
    config.close()

    starts = []
    rss = None
    for run in range(args.runs):
        api = RuntimeApi(trace=args.tracing)
        threading.Thread(target=api.serve_forever, daemon=True).start()
        env = dict(os.environ,
                   AWS_LAMBDA_RUNTIME_API=f"127.0.0.1:{api.server_port}",
                   AWS_LAMBDA_FUNCTION_NAME="ingress", AWS_LAMBDA_FUNCTION_VERSION="$LATEST",
                   AWS_LAMBDA_FUNCTION_MEMORY_SIZE="256", AWS_LAMBDA_LOG_STREAM_NAME="cold",
                   AWS_LAMBDA_LOG_GROUP_NAME="/aws/lambda/ingress",
                   AWS_ENDPOINT_URL=endpoint, AWS_REGION="us-east-1",
                   AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test",
                   HOOKGATE_CONFIG=config.name, COLD_RETELL_KEY=SECRET, RUST_LOG="warn")
        if args.tracing:
            # What Lambda sets for a function with active tracing.
            env.update(AWS_XRAY_DAEMON_ADDRESS="169.254.79.129:2000",
                       _AWS_XRAY_DAEMON_ADDRESS="169.254.79.129", _AWS_XRAY_DAEMON_PORT="2000",
                       AWS_XRAY_CONTEXT_MISSING="LOG_ERROR")
        spawned = time.perf_counter()
        proc = subprocess.Popen([args.binary], env=env, stdout=subprocess.DEVNULL)
        while api.first_poll is None:
            if proc.poll() is not None:
                sys.exit(f"ingress exited with {proc.returncode} before serving")
            time.sleep(0.0005)
        starts.append((api.first_poll - spawned) * 1000)
        if run == args.runs - 1:
            for n in range(args.burst):
                api.events.put((f"req-{n}", signed_event(n)))
                _, kind, payload, _ = api.answers.get(timeout=30)
                answer = json.loads(payload)
                if kind != "response" or answer.get("statusCode") != 202:
                    sys.exit(f"invocation {n} answered {kind}: {payload[:300]!r}")
            rss = peak_rss_kib(proc.pid)
        proc.kill()
        proc.wait()
        api.shutdown()

    emulator.stdin.close()
    emulator.wait()
    os.unlink(config.name)
    tracing = "tracing on" if args.tracing else "tracing off"
    print(f"{tracing}: cold start to first poll over {args.runs} runs: median {statistics.median(starts):.1f} ms "
          f"(min {min(starts):.1f}, max {max(starts):.1f})")
    print(f"{tracing}: peak RSS after a burst of {args.burst} webhooks (all 202): {rss / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
