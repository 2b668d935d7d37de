"""Every `hookgate` help example, run as written against `make local`'s stack.

Run by scripts/local-smoke.sh (part of `make test`) once its stack serves:
this walks `hookgate --help` and every command's `--help`, collects each
"Example(s):" line and runs it with bash, in help order, from a scratch
directory, requiring exit 0. What it changes, and only that:

- `--stack hookgate-prod` becomes `--stack hookgate-local` (`make local`'s
  stack in the emulator's CloudFormation); `HOOKGATE_STACK` is unset, so
  every example names what it needs;
- `ID` and `KEY` become real ids: a triage item and an action key this walk
  makes first (two key collisions; two actions marked `UNCERTAIN` in the
  ledger, as a lost answer on a searchable destination leaves one, since
  `make local`'s CRM dedups by idempotency key and never does);
- `console` gets `--port 0` (a free port: 8790 may be taken), and it and
  `logs --tail` are stopped by SIGINT once they run, which must end them
  with exit 0;
- `doctor` exits 1 on `make local` for one check only, the 3 s visibility
  timeout `make local` chooses so an outage reaches the DLQ in seconds
  (docs/operations.md): that exit, with that one failure, is its success.

The files the examples name are made here: `body.json` (the Retell event
`call_analyzed:c-123`, callback `cb-123`, whose lines, inbox record and
action the later examples read), `hookgate.toml` (the configuration `make
local` runs), `config/` and `events/` (the checkout's); `RETELL_KEY` holds
the documented local test secret, and the profile `prod` the emulator's
credentials. After `triage approve ID` without `--execute` the item must
still be HELD, and after it with `--execute` no longer: help says a dry run
unless --execute, by id as in bulk.

Usage: help_examples.py HOOKGATE_BINARY (with AWS_ENDPOINT_URL, AWS_REGION
and the emulator's credentials in the environment, and the checkout's
.local/local.toml written by scripts/local.sh).
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STACK = "hookgate-local"
SECRET = "key_local_ws42_retell"  # the documented local test secret


def fail(message):
    print(f"help-examples: {message}", file=sys.stderr)
    sys.exit(1)


def body(call, callback, summary="Wants a callback"):
    return json.dumps(
        {
            "event": "call_analyzed",
            "call": {
                "call_id": call,
                "metadata": {"workspace": "ws-42"},
                "call_analysis": {
                    "call_summary": summary,
                    "custom_analysis_data": {
                        "callback_requested": True,
                        "callback_request_id": callback,
                    },
                },
            },
        },
        separators=(",", ":"),
    )


class Walk:
    def __init__(self, binary):
        self.binary = str(Path(binary).resolve())
        self.work = Path(tempfile.mkdtemp(prefix="hookgate-examples-"))
        home = self.work / "home"
        home.mkdir()
        (self.work / "aws-config").write_text("[profile prod]\nregion = us-east-1\n")
        (self.work / "aws-credentials").write_text(
            "[prod]\naws_access_key_id = test\naws_secret_access_key = test\n"
        )
        bin_dir = self.work / "bin"
        bin_dir.mkdir()
        (bin_dir / "hookgate").symlink_to(self.binary)
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOOKGATE_")}
        env.update(
            HOME=str(home),
            PATH=f"{bin_dir}:{env.get('PATH', '/usr/bin:/bin')}",
            AWS_CONFIG_FILE=str(self.work / "aws-config"),
            AWS_SHARED_CREDENTIALS_FILE=str(self.work / "aws-credentials"),
            RETELL_KEY=SECRET,
        )
        self.env = env
        (self.work / "body.json").write_text(body("c-123", "cb-123"))
        shutil.copy(ROOT / ".local/local.toml", self.work / "hookgate.toml")
        (self.work / "config").symlink_to(ROOT / "config")
        (self.work / "events").symlink_to(ROOT / "events")
        self.ids = {}

    def hookgate(self, *args, check=True):
        """The binary as set-up, not an example: its stdout."""
        run = subprocess.run(
            [self.binary, "--stack", STACK, "--config", "hookgate.toml", *args],
            cwd=self.work,
            env=self.env,
            capture_output=True,
            text=True,
        )
        if check and run.returncode != 0:
            fail(f"setup: hookgate {' '.join(args)} exited {run.returncode}: {run.stderr}")
        return run.stdout

    def send(self, text, name):
        (self.work / name).write_text(text)
        return self.hookgate(
            "send", "--provider", "retell", "--workspace", "ws-42", "--secret", SECRET,
            "--body", name, check=False,
        )

    def until(self, what, probe, tries=120):
        for _ in range(tries):
            got = probe()
            if got:
                return got
            time.sleep(0.5)
        fail(f"setup: {what} did not happen in {tries / 2:.0f} s")

    def item_status(self, item_id):
        return json.loads(self.hookgate("--json", "triage", "show", item_id))["status"]

    def collision(self, call):
        """A key-collision item: one event id, two payloads."""
        self.send(body(call, f"cb-{call}", "first"), f"{call}-1.json")
        self.send(body(call, f"cb-{call}", "edited"), f"{call}-2.json")
        pk = f"ws-42#retell#call_analyzed:{call}"

        def held():
            items = json.loads(self.hookgate("--json", "triage", "list", "--class", "key-collision"))
            return next((i["id"] for i in items if i.get("inbox_pk") == pk), None)

        return self.until(f"the collision of {call} held", held)

    def uncertain(self, key):
        """Marks a completed action UNCERTAIN in the ledger, as a lost answer
        on a searchable destination leaves one."""
        import boto3  # the emulator's venv has it

        table = boto3.resource(
            "dynamodb",
            endpoint_url=os.environ["AWS_ENDPOINT_URL"],
            region_name="us-east-1",
            aws_access_key_id="test",
            aws_secret_access_key="test",
        ).Table(f"{STACK}-ActionsTable")

        def completed():
            item = table.get_item(Key={"pk": key}).get("Item")
            return item and item.get("status") == "COMPLETED"

        self.until(f"{key} COMPLETED", completed)
        table.update_item(
            Key={"pk": key},
            UpdateExpression="SET #s = :u, last_error_kind = :k, last_error = :e REMOVE destination_ref",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={
                ":u": "UNCERTAIN",
                ":k": "outcome-unknown",
                ":e": "the answer was lost (help_examples.py)",
            },
        )

    def examples(self):
        """(command path, example line) in help order."""
        found = []

        def walk(path):
            flag = "--help"
            run = subprocess.run([self.binary, *path, flag], capture_output=True, text=True, check=True)
            text = run.stdout
            section = re.search(r"^Examples?:\n((?:  .*\n?)+)", text, re.M)
            if section:
                for line in section.group(1).splitlines():
                    found.append((" ".join(path), line.strip()))
            commands = re.search(r"^Commands:\n((?:  .*\n)+)", text, re.M)
            if commands:
                for line in commands.group(1).splitlines():
                    name = line.split()[0]
                    if name != "help":
                        walk([*path, name])

        walk([])
        return found

    def prepare(self, command, line):
        """The line as run, after the set-up its ids need."""
        line = line.replace("--stack hookgate-prod", f"--stack {STACK}")
        if command == "triage show":
            self.ids["show"] = self.ids.get("show") or self.collision("c-col-1")
            line = line.replace(" ID", f" {self.ids['show']}")
        elif command == "triage approve" and " ID " in line:
            item = self.ids.get("show") or self.collision("c-col-1")
            self.ids["show"] = item
            line = line.replace(" ID ", f" {item} ")
        elif command == "triage reject":
            line = line.replace(" ID ", f" {self.collision('c-col-2')} ")
        elif command == "actions reconcile":
            key = "ws-42#create_followup_task#cb-123" if "--found" in line else "ws-42#create_followup_task#cb-124"
            if "--not-found" in line:
                self.send(body("c-124", "cb-124"), "c-124.json")
            self.uncertain(key)
            line = line.replace(" KEY ", f" '{key}' ")
        elif command == "console":
            line += " --port 0"
        if re.search(r"(^|\s)(ID|KEY)(\s|$)", line):
            fail(f"a placeholder is left in: {line}")
        return line

    def run(self, command, line):
        if command == "console" or "--tail" in line:
            return self.run_and_interrupt(command, line)
        last = None
        # Retried while the emulator has not served what it reads yet; the
        # first failure is printed all the same, so a retry never hides one
        # (a command that changes state could pass on the state it left).
        for attempt in range(20):
            if attempt == 1:
                print(f"help-examples: `{line}` failed once, retried:\n{last.stdout}{last.stderr}",
                      file=sys.stderr)
            run = subprocess.run(
                ["bash", "-c", line], cwd=self.work, env=self.env, capture_output=True, text=True
            )
            if run.returncode == 0:
                return run
            if command == "doctor" and run.returncode == 1:
                fails = [l for l in run.stdout.splitlines() if l.startswith("FAIL")]
                if len(fails) == 1 and fails[0].startswith("FAIL  visibility timeout"):
                    return run
            last = run
            # Lines, records and items the emulator has not served yet.
            time.sleep(0.5)
        fail(f"`{line}` exited {last.returncode}:\n{last.stdout}{last.stderr}")

    def run_and_interrupt(self, command, line):
        out = self.work / "interrupted.out"
        with open(out, "w") as sink:
            proc = subprocess.Popen(
                ["bash", "-c", f"exec {line}"], cwd=self.work, env=self.env,
                stdout=sink, stderr=subprocess.STDOUT,
            )
            deadline = time.time() + 20
            ready = (lambda: "open http" in out.read_text()) if command == "console" else (lambda: time.time() > deadline - 17)
            while not ready():
                if proc.poll() is not None:
                    fail(f"`{line}` exited {proc.returncode} before it was interrupted: {out.read_text()}")
                if time.time() > deadline:
                    proc.kill()
                    fail(f"`{line}` did not start: {out.read_text()}")
                time.sleep(0.2)
            proc.send_signal(signal.SIGINT)
            try:
                code = proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                fail(f"`{line}` did not stop on SIGINT")
        if code != 0:
            fail(f"`{line}` exited {code} on SIGINT: {out.read_text()}")

    def check_after(self, command, line):
        if command == "triage approve" and self.ids.get("show") and f" {self.ids['show']} " in line:
            status = self.item_status(self.ids["show"])
            if "--execute" in line and status == "HELD":
                fail(f"`{line}` left the item HELD")
            if "--execute" not in line and status != "HELD":
                fail(f"`{line}` (a dry run) changed the item: {status}")


def main():
    walk = Walk(sys.argv[1])
    examples = walk.examples()
    if len(examples) < 25:
        fail(f"only {len(examples)} examples found: {examples}")
    for command, line in examples:
        prepared = walk.prepare(command, line)
        walk.run(command, prepared)
        walk.check_after(command, prepared)
        print(f"ok  {prepared}")
    shutil.rmtree(walk.work, ignore_errors=True)
    print(f"help-examples ok: {len(examples)} examples ran as written against {STACK}")


if __name__ == "__main__":
    main()
