"""Checks what a default `make demo` run must show beyond its exit code
(`make test`'s demo stage): every staged failure class reached triage and was
decided (the poison class twice: the CRM's refusal and the email service's),
each payment made its three effects once, and both report files were written.

usage: python tests/dev/check-demo-report.py target/demo
"""

import json
import sys
from pathlib import Path


def main():
    out = Path(sys.argv[1])
    report = json.loads((out / "report.json").read_text())
    classes = report["triage"]["by_class"]
    operator = report["operator"]
    problems = []
    if report["ok"] is not True:
        problems.append("report.json: ok is not true")
    for name, want in (("key-collision", 1), ("uncertain", 2), ("poison", 2)):
        if classes.get(name) != want:
            problems.append(f"triage class {name}: {classes.get(name)}, not {want}")
    if not classes.get("downstream-outage"):
        problems.append("no downstream-outage item: the outage reached no DLQ")
    for name in ("reconciled_found", "reconciled_not_found"):
        if operator.get(name) != 1:
            problems.append(f"operator {name}: {operator.get(name)}, not 1")
    if report["actions"]["intended"] != report["actions"]["crm_tasks"]:
        problems.append(f"actions: {report['actions']}")
    payments = report["actions"]["payments"]
    if not payments["payments"] or any(
        payments[effect] != payments["payments"] for effect in ("orders", "tasks", "emails")
    ):
        problems.append(f"payments: {payments}")
    if report["aws_requests"]["per_delivery"] <= 2.0:
        problems.append(f"AWS requests per delivery {report['aws_requests']['per_delivery']}")
    html = (out / "report.html").read_text()
    if "<svg" not in html or "deliveries accepted" not in html or "<script" in html:
        problems.append("report.html: not the self-contained page with its chart")
    for problem in problems:
        print(f"check-demo-report: {problem}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"check-demo-report: {out} holds every staged class, decided, and both files")


if __name__ == "__main__":
    main()
