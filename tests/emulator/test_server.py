"""Tests of tests/emulator/server.py's own behaviour, against a server it starts.

Run by `make emulator-check` (`.venv/bin/python -m unittest tests/emulator/test_server.py`).
Each test starts one emulator on a free port of 127.0.0.1 and talks to it
with boto3, as the scripts do.
"""

import subprocess
import sys
import threading
import time
import unittest
from collections import Counter
from pathlib import Path

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

SERVER = Path(__file__).with_name("server.py")


class Emulator:
    """server.py on a free port, stopped by closing its standard input."""

    def __enter__(self):
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER), "--port", "0"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line.startswith("listening "):
            raise RuntimeError(f"server.py did not start: {line!r} {self.process.stderr.read()}")
        self.endpoint = "http://" + line.split()[1]
        return self

    def __exit__(self, *exc):
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.stderr = self.process.stderr.read()
        self.process.stdout.close()
        self.process.stderr.close()

    def sqs(self):
        return boto3.client(
            "sqs", endpoint_url=self.endpoint, region_name="us-east-1",
            aws_access_key_id="test", aws_secret_access_key="test",
            config=Config(retries={"max_attempts": 1}, max_pool_connections=32))


def in_threads(count, work):
    """Runs work(i) in `count` threads at once; returns their results."""
    results = [None] * count
    start = threading.Barrier(count)

    def run(i):
        start.wait()
        results[i] = work(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def send_many(sqs, url, count):
    for first in range(0, count, 10):
        sqs.send_message_batch(QueueUrl=url, Entries=[
            {"Id": str(i), "MessageBody": f"m{i}"} for i in range(first, min(first + 10, count))])


class SqsUnderConcurrency(unittest.TestCase):
    """moto 5.2.5's receive, delete and visibility change read and rewrite a
    queue's message list without a lock: concurrent receives answered 500
    (`ValueError: list.remove(x): x not in list`, two receives moving the
    same message to the DLQ) and could hand one message to two receivers.
    server.py serialises them per queue, outside a long poll's wait."""

    def test_concurrent_receives_move_each_message_to_the_dlq_once_and_never_fail(self):
        with Emulator() as emulator:
            sqs = emulator.sqs()
            dlq = sqs.create_queue(QueueName="dead")["QueueUrl"]
            dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])[
                "Attributes"]["QueueArn"]
            url = sqs.create_queue(QueueName="work", Attributes={
                "RedrivePolicy": f'{{"deadLetterTargetArn":"{dlq_arn}","maxReceiveCount":"1"}}',
            })["QueueUrl"]
            total = 150
            send_many(sqs, url, total)
            errors = Counter()

            def receive(_):
                received = []
                for _ in range(20):
                    try:
                        out = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                                  VisibilityTimeout=0, WaitTimeSeconds=0)
                    except ClientError as error:
                        errors[error.response["Error"]["Code"]] += 1
                        continue
                    received += [m["Body"] for m in out.get("Messages", [])]
                return received

            in_threads(8, receive)
            dead = []
            while True:
                out = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10, VisibilityTimeout=60)
                if not out.get("Messages"):
                    break
                dead += [m["Body"] for m in out["Messages"]]
        self.assertEqual(errors, Counter(), emulator.stderr[-2000:])
        self.assertNotIn("list.remove", emulator.stderr)
        twice = [body for body, n in Counter(dead).items() if n > 1]
        self.assertEqual(twice, [], "moved to the DLQ more than once")
        self.assertEqual(len(dead), total, "every message reached the DLQ")

    def test_a_message_is_received_once_within_its_visibility(self):
        with Emulator() as emulator:
            sqs = emulator.sqs()
            url = sqs.create_queue(QueueName="work")["QueueUrl"]
            total = 200
            send_many(sqs, url, total)

            def receive(_):
                received = []
                for _ in range(4):
                    out = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                              VisibilityTimeout=60, WaitTimeSeconds=0)
                    received += [m["Body"] for m in out.get("Messages", [])]
                return received

            received = [body for per_thread in in_threads(8, receive) for body in per_thread]
        twice = [body for body, n in Counter(received).items() if n > 1]
        self.assertEqual(twice, [], "handed to two receivers at once")
        self.assertEqual(len(received), total)

    def test_sends_beside_deletes_lose_no_message(self):
        with Emulator() as emulator:
            sqs = emulator.sqs()
            url = sqs.create_queue(QueueName="work")["QueueUrl"]
            total = 160
            send_many(sqs, url, 80)
            deleted = []

            def work(i):
                if i < 4:  # senders
                    for n in range(20):
                        sqs.send_message(QueueUrl=url, MessageBody=f"s{i}-{n}")
                    return
                for _ in range(12):  # receivers that delete what they got
                    out = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                              VisibilityTimeout=60, WaitTimeSeconds=0)
                    for m in out.get("Messages", []):
                        sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
                        deleted.append(m["Body"])

            in_threads(8, work)
            left = []
            while True:
                out = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60)
                if not out.get("Messages"):
                    break
                left += [m["Body"] for m in out["Messages"]]
        self.assertEqual(sorted(Counter(deleted + left).values()), [1] * total,
                         "each message deleted or left, exactly once")

    def test_a_long_poll_does_not_hold_its_queue(self):
        with Emulator() as emulator:
            sqs = emulator.sqs()
            url = sqs.create_queue(QueueName="work")["QueueUrl"]
            other = sqs.create_queue(QueueName="other")["QueueUrl"]
            got = {}

            def long_poll(i):
                started = time.monotonic()
                out = sqs.receive_message(QueueUrl=[url, other][i], WaitTimeSeconds=5)
                got[i] = ([m["Body"] for m in out.get("Messages", [])], time.monotonic() - started)

            pollers = [threading.Thread(target=long_poll, args=(i,)) for i in (0, 1)]
            for t in pollers:
                t.start()
            time.sleep(0.5)  # both are waiting
            started = time.monotonic()
            sqs.send_message(QueueUrl=url, MessageBody="wake")
            sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])
            served = time.monotonic() - started
            for t in pollers:
                t.join()
        self.assertLess(served, 1.0, "a send and a read beside a waiting long poll")
        self.assertEqual(got[0][0], ["wake"])
        self.assertLess(got[0][1], 2.0, "the long poll woke on the send")
        self.assertEqual(got[1][0], [])
        self.assertGreater(got[1][1], 4.5, "the other queue's long poll waited its time")


if __name__ == "__main__":
    unittest.main()
