"""Proves the infra checks refuse the broken copies in infra/fixtures/.

    .venv-tools/bin/python scripts/infra_selftest.py

For each infra/fixtures/*.json: applies its text substitutions to the real
infra/template.yaml (each `old` must occur exactly once: a fixture that no
longer applies fails here), writes the copy to target/infra/fixtures/, and runs
the same commands `make infra-check` runs (scripts/transform.py, then
scripts/check_infra.py, or checkov from .venv-scan). The stage named by the fixture must fail with the
expected message; any broken copy that is accepted fails the run (exit 1).
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "infra/template.yaml"
FIXTURES = ROOT / "infra/fixtures"
OUT = ROOT / "target/infra/fixtures"
CHECKOV = ROOT / ".venv-scan/bin/checkov"


def run(*args):
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, cwd=ROOT)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    original = TEMPLATE.read_text(encoding="utf-8")
    failures = []
    fixtures = sorted(FIXTURES.glob("*.json"))
    if not fixtures:
        failures.append("no fixtures in infra/fixtures")
    for path in fixtures:
        name = path.stem
        fixture = json.loads(path.read_text(encoding="utf-8"))
        text = original
        for old, new in fixture["replace"]:
            count = text.count(old)
            if count != 1:
                failures.append(f"{name}: the text to break occurs {count} times in infra/template.yaml "
                                f"(expected once; update the fixture): {old[:60]!r}")
                break
            text = text.replace(old, new)
        else:
            broken = OUT / f"{name}.yaml"
            transformed = OUT / f"{name}.json"
            broken.write_text(text, encoding="utf-8")
            result = run(ROOT / "scripts/transform.py", broken, "--out", transformed)
            if fixture["stage"] == "check" and result.returncode == 0:
                result = run(ROOT / "scripts/check_infra.py", transformed, "--raw", broken)
            elif fixture["stage"] == "scan" and result.returncode == 0:
                result = subprocess.run([str(CHECKOV), "--quiet", "--compact", "--framework", "cloudformation",
                                         "--skip-download", "-f", str(transformed)],
                                        capture_output=True, text=True, cwd=ROOT)
            output = result.stdout + result.stderr
            if result.returncode == 0:
                failures.append(f"{name}: ACCEPTED by the {fixture['stage']} stage ({fixture['description']})")
            elif fixture["expect"] not in output:
                failures.append(f"{name}: refused, but not with {fixture['expect']!r}:\n{output}")
            else:
                print(f"infra-selftest: {name}: refused by {fixture['stage']} as expected")
    for f in failures:
        print(f"infra-selftest: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
