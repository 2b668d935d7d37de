#!/usr/bin/env bash
# `make local-smoke` (part of `make test`): `make local`'s script as a user
# runs it — emulator, template resources, simulated CRM, `hookgate-dev local`
# — then one signed webhook sent twice over HTTP: `new`, then `duplicate`,
# and exactly one CRM task; then the operator's commands against the stack
# by its name (`--stack`, from the emulator's CloudFormation): status, send,
# logs of what send caused, triage list, stats, doctor, a bulk approval
# interrupted by SIGINT, every help example as written, the console. Stops
# everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."

export HOOKGATE_PORT=${HOOKGATE_SMOKE_PORT:-9187}
export HOOKGATE_CRM_PORT=${HOOKGATE_SMOKE_CRM_PORT:-9188}
export HOOKGATE_EMULATOR_PORT=${HOOKGATE_SMOKE_EMULATOR_PORT:-9166}
WORK=$(mktemp -d)
setsid scripts/local.sh > "$WORK/local.out" 2>&1 &
LOCAL=$!
cleanup() { kill -- "-$LOCAL" 2>/dev/null || true; wait "$LOCAL" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
fail() { echo "local-smoke: $*" >&2; cat "$WORK/local.out" >&2; exit 1; }

for _ in $(seq 120); do
  grep -q "hookgate-dev local: POST" "$WORK/local.out" && break
  kill -0 "$LOCAL" 2>/dev/null || fail "make local's script exited"
  sleep 0.5
done
grep -q "hookgate-dev local: POST" "$WORK/local.out" || fail "hookgate-dev local did not start"

printf '%s' '{"event":"call_analyzed","call":{"call_id":"c-smoke","metadata":{"workspace":"ws-42"},"call_analysis":{"call_summary":"smoke","custom_analysis_data":{"callback_requested":true,"callback_request_id":"cb-smoke"}}}}' > "$WORK/body.json"
post() {
  # The documented local test secret (CONTRIBUTING.md, "Test secrets").
  SECRET=key_local_ws42_retell target/debug/hookgate sign --provider retell --secret env:SECRET \
    --body "$WORK/body.json" --url "http://127.0.0.1:$HOOKGATE_PORT/webhooks/retell/ws-42" \
    | tail -1 > "$WORK/curl.sh"
  bash "$WORK/curl.sh"
}
tasks() { curl -sS "http://127.0.0.1:$HOOKGATE_CRM_PORT/_sim/tasks" | sed -n 's/^{"total":\([0-9]*\).*/\1/p'; }

first=$(post)
[[ $first == '{"event_key":"call_analyzed:c-smoke","verdict":"new"}' ]] || fail "first delivery answered $first"
for _ in $(seq 60); do [[ $(tasks) == 1 ]] && break; sleep 0.5; done
[[ $(tasks) == 1 ]] || fail "no CRM task after the first delivery (tasks: $(tasks))"
again=$(post)
[[ $again == '{"event_key":"call_analyzed:c-smoke","verdict":"duplicate"}' ]] || fail "the repeat answered $again"
sleep 3
[[ $(tasks) == 1 ]] || fail "the repeat made another task (tasks: $(tasks))"

# The operator's tools against the stack make local registered in the
# emulator, found by its name as on AWS (docs/operations.md, "Operating a
# deployed stack"): no HOOKGATE_* table or queue variable is set.
if env | grep -E '^HOOKGATE_[A-Z_]*(TABLE|QUEUE_URL)=' >&2; then fail "a table or queue variable is set"; fi
export AWS_ENDPOINT_URL="http://127.0.0.1:$HOOKGATE_EMULATOR_PORT" AWS_REGION=us-east-1
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
export HOOKGATE_STACK=hookgate-local
hg() { target/debug/hookgate "$@"; }

hg status > "$WORK/status.txt" || fail "hookgate status: $(cat "$WORK/status.txt")"
grep -q '^stack     hookgate-local (CREATE_COMPLETE)' "$WORK/status.txt" || fail "status names no stack: $(cat "$WORK/status.txt")"
grep -q '^  InboxTableName  *hookgate-local-InboxTable$' "$WORK/status.txt" || fail "status shows no inbox table: $(cat "$WORK/status.txt")"

# Two events, one id a prefix of the other's: the service's term filter finds
# both for c-send, so only the client's JSON check keeps c-send-2's lines out.
for call in c-send c-send-2; do
  printf '%s' '{"event":"call_analyzed","call":{"call_id":"'$call'","metadata":{"workspace":"ws-42"},"call_analysis":{"call_summary":"send","custom_analysis_data":{"callback_requested":true,"callback_request_id":"cb-'$call'"}}}}' > "$WORK/$call.json"
  sent=$(hg send --provider retell --workspace ws-42 --secret key_local_ws42_retell --body "$WORK/$call.json") \
    || fail "hookgate send: $sent"
  [[ $sent == "202 new call_analyzed:$call" ]] || fail "hookgate send printed $sent"
done
for _ in $(seq 60); do [[ $(tasks) == 3 ]] && break; sleep 0.5; done
[[ $(tasks) == 3 ]] || fail "no CRM task after hookgate send (tasks: $(tasks))"

# The event's lines, from the webhook to the CRM, as each function wrote them
# to its log group.
for _ in $(seq 40); do
  hg logs --correlation call_analyzed:c-send > "$WORK/logs.txt" 2>&1 || true
  grep -q ' ingress ' "$WORK/logs.txt" && grep -q ' action ' "$WORK/logs.txt" && break
  sleep 0.5
done
grep -Eq ' ingress .*correlation_id=call_analyzed:c-send( |$)' "$WORK/logs.txt" || fail "logs found no ingress line of the sent event: $(cat "$WORK/logs.txt")"
grep -Eq ' action .*correlation_id=call_analyzed:c-send( |$)' "$WORK/logs.txt" || fail "logs found no action line of the sent event: $(cat "$WORK/logs.txt")"
if grep -Ev 'correlation_id=call_analyzed:c-send( |$)' "$WORK/logs.txt" | grep -q .; then fail "logs printed another event's line: $(cat "$WORK/logs.txt")"; fi
hg logs --correlation call_analyzed:c-send --json | python3 -c '
import json, sys
lines = [json.loads(l) for l in sys.stdin]
assert lines and all(l["correlation_id"] == "call_analyzed:c-send" for l in lines), lines
assert {l["function_name"] for l in lines} == {"ingress", "action"}, lines
' || fail "logs --json printed other lines"

hg triage list > "$WORK/triage.txt" || fail "hookgate triage list: $(cat "$WORK/triage.txt")"
# The figures are CloudWatch's: the runner sends the functions' EMF values
# there a batch a second, as CloudWatch Logs would extract them.
counted() {
  python3 -c '
import json, sys
stats = json.load(open(sys.argv[1]))
got = tuple(stats[k] for k in ("deliveries", "duplicates", "rejected", "completed"))
assert got == (4, 1, 0, 3), stats
' "$WORK/stats.json"
}
for _ in $(seq 20); do
  hg stats --since 1h --json > "$WORK/stats.json" || fail "hookgate stats: $(cat "$WORK/stats.json")"
  counted 2>/dev/null && break
  sleep 0.5
done
counted || fail "hookgate stats counted otherwise: $(cat "$WORK/stats.json")"
# doctor exits 1 here, and only for the local stack's 3 s visibility
# timeout, chosen so an outage reaches the DLQ in seconds; the stack's alarms
# pass its checks. No --config: the stack brings the configuration it was
# provisioned with (its template's Metadata), as make deploy's does.
code=0; hg doctor > "$WORK/doctor.txt" 2>&1 || code=$?
[[ $code == 1 ]] || fail "doctor exited $code: $(cat "$WORK/doctor.txt")"
[[ $(grep -c '^FAIL' "$WORK/doctor.txt") == 1 ]] && grep -q '^FAIL  visibility timeout' "$WORK/doctor.txt" \
  || fail "doctor failed other checks: $(cat "$WORK/doctor.txt")"
grep -q '^ok    every failure class has an alarm' "$WORK/doctor.txt" || fail "doctor read no alarms of the stack: $(cat "$WORK/doctor.txt")"

# A bulk approval stopped by SIGINT: three callbacks held by a CRM outage,
# their plan approved at one a second and interrupted after the first item's
# line. The report and the triage table must agree: one approved, two HELD.
crm_faults() { curl -sS -X "$1" "http://127.0.0.1:$HOOKGATE_CRM_PORT/_sim/faults" -H 'content-type: application/json' "${@:2}" > /dev/null; }
crm_faults POST -d '{"path":"/tasks","kind":"status","status":503}'
for call in c-int-1 c-int-2 c-int-3; do
  printf '%s' '{"event":"call_analyzed","call":{"call_id":"'$call'","metadata":{"workspace":"ws-42"},"call_analysis":{"call_summary":"int","custom_analysis_data":{"callback_requested":true,"callback_request_id":"cb-'$call'"}}}}' > "$WORK/$call.json"
  hg send --provider retell --workspace ws-42 --secret key_local_ws42_retell --body "$WORK/$call.json" > /dev/null || fail "hookgate send $call"
done
held() { hg triage list --class downstream-outage --json | python3 -c 'import json, sys; print(" ".join(sorted(i["id"] for i in json.load(sys.stdin))))'; }
for _ in $(seq 80); do [[ $(held | wc -w) == 3 ]] && break; sleep 0.5; done
[[ $(held | wc -w) == 3 ]] || fail "the outage held $(held | wc -w) items, not 3"
crm_faults DELETE
hg triage approve --class downstream-outage --reason 'CRM back' --plan-out "$WORK/plan.json" > /dev/null 2>&1 \
  || fail "the bulk dry run failed"
target/debug/hookgate --json triage approve --execute --plan "$WORK/plan.json" --rate 1 \
  > "$WORK/approve.jsonl" 2> "$WORK/approve.err" &
APPROVE=$!
for _ in $(seq 600); do [[ -s $WORK/approve.jsonl ]] && break; sleep 0.1; done
[[ -s $WORK/approve.jsonl ]] || { kill "$APPROVE"; fail "the approval printed no item in 60 s: $(cat "$WORK/approve.err")"; }
kill -INT "$APPROVE"; code=0; wait "$APPROVE" || code=$?
[[ $code == 130 ]] || fail "the interrupted approval exited $code: $(cat "$WORK/approve.jsonl" "$WORK/approve.err")"
python3 - "$WORK/approve.jsonl" "$(held)" <<'EOF' || fail "the interrupted approval's report and the triage table disagree: $(cat "$WORK/approve.jsonl") / HELD: $(held)"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
items, summary = lines[:-1], lines[-1]
assert [i["id"] for i in items] == summary["approved"], lines
# The signal lands in the second's pause after the first item, or (on a
# slow machine) during the second item, which then finishes.
assert 1 <= len(summary["approved"]) <= 2 and summary["stopped"] is True, lines
assert sorted(summary["not_approved"]) == sys.argv[2].split(), (summary, sys.argv[2])
EOF

# Every help example as written (scripts/help_examples.py): the stack's
# name for hookgate-prod's, real ids for ID and KEY; triage approve by id a
# dry run without --execute, as help says.
.venv/bin/python scripts/help_examples.py target/debug/hookgate > "$WORK/examples.txt" 2>&1 \
  || fail "a help example failed: $(cat "$WORK/examples.txt")"
tail -1 "$WORK/examples.txt"

# The binary itself in the background (not the hg function: its subshell's
# PID would be killed and the console left running).
target/debug/hookgate console --port 0 > "$WORK/console.out" 2> "$WORK/console.err" &
CONSOLE=$!
for _ in $(seq 40); do grep -q 'open http' "$WORK/console.out" && break; sleep 0.25; done
login=$(sed -n 's/^hookgate console: open \(http[^ ]*\) .*/\1/p' "$WORK/console.out")
[[ -n $login ]] || { kill "$CONSOLE"; fail "the console printed no login link: $(cat "$WORK/console.out" "$WORK/console.err")"; }
curl -sS -c "$WORK/jar" -b "$WORK/jar" -L "$login" > "$WORK/overview.html" || true
kill "$CONSOLE"; wait "$CONSOLE" 2>/dev/null || true
# The stack's alarms summarised ("35 OK"), those not OK listed.
grep -Eq 'id="alarms-summary">[1-9][0-9]* OK' "$WORK/overview.html" || fail "the console's overview counts no alarm of the stack: $(head -c 2000 "$WORK/overview.html")"

echo "local-smoke ok: make local served a signed webhook: new, then duplicate, one CRM task;"
echo "  hookgate --stack hookgate-local: status, send (202 new, one more task), logs (its ingress and action lines), triage list, stats, doctor,"
echo "  a bulk approval interrupted by SIGINT (its report as the triage table), every help example, console"
