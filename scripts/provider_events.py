"""`make invoke-fixtures`: each provider fixture (tests/fixtures/providers/
deliveries/*.json) as API Gateway (HTTP API, v2) hands it to the ingress,
from events/apigw-v2-retell-call-ended.json with the fixture's path, body and
headers. Their signatures are stale (the fixtures were signed in 2023): the
script re-signs each with `hookgate sign --event` before invoking it.

Writes DIR/{provider}-{n}.json; DIR/providers.toml, each provider's binding
in ws-1 (each distinct secret of its cases from
`env:HOOKGATE_FIXTURE_{PROVIDER}_{i}`, its `public_url` where the fixture
signs a URL), to append to config/fixtures.toml; and DIR/providers.env,
those variables and each case's signing key
(HOOKGATE_FIXTURE_SIGN_{PROVIDER}_{n}: its `signing_key`, or its secret). Prints one line per event, tab-separated: file, provider, the
variable of its signing key, id (or -), what the ingress must answer
(`202 new`, `202 duplicate` for a case that repeats an earlier one, or `200`
and the handshake's answer).
"""

import json
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(out_dir):
    template = json.loads((ROOT / "events/apigw-v2-retell-call-ended.json").read_text())
    out = Path(out_dir)
    bindings, env = [], []
    for path in sorted((ROOT / "tests/fixtures/providers/deliveries").glob("*.json")):
        fixture = json.loads(path.read_text())
        provider = fixture["provider"]
        var = "HOOKGATE_FIXTURE_" + provider.upper().replace("-", "_")
        first = fixture["cases"][0]
        secrets = list(dict.fromkeys(case["secret"] for case in fixture["cases"]))
        references = ", ".join(f'"env:{var}_{i}"' for i in range(len(secrets)))
        bindings.append(f"[workspaces.ws-1.{provider}]\nsecrets = [{references}]\n"
                        + (f"public_url = \"{first['url']}\"\n" if first["url"] else ""))
        env.extend(f"{var}_{i}={shlex.quote(secret)}" for i, secret in enumerate(secrets))
        for n, case in enumerate(fixture["cases"]):
            sign_var = f"{var.replace('FIXTURE_', 'FIXTURE_SIGN_')}_{n}"
            env.append(f"{sign_var}={shlex.quote(case.get('signing_key', case['secret']))}")
            event = json.loads(json.dumps(template))
            route = f"/webhooks/{provider}/ws-1"
            event["rawPath"] = event["requestContext"]["http"]["path"] = route
            event["pathParameters"] = {"provider": provider, "workspace": "ws-1"}
            event["headers"] = {"host": template["headers"]["host"],
                                "content-type": "application/json",
                                **{k: v for k, v in case["headers"]}}
            event["body"] = case["body"]
            file = out / f"{provider}-{n}.json"
            file.write_text(json.dumps(event, indent=1))
            # A documented repeat of an earlier case (Paddle's replay under a
            # new notification_id) is that event again: `202 duplicate`.
            expect = (f"200\t{json.dumps(case['handshake'], separators=(',', ':'), sort_keys=True)}"
                      if "handshake" in case
                      else "202\tduplicate" if "repeat_of" in case else "202\tnew")
            print(f"{file}\t{provider}\t{sign_var}\t{case.get('id', '-')}\t{expect}")
    (out / "providers.toml").write_text(
        "\n# The provider fixtures' bindings (scripts/provider_events.py).\n" + "\n".join(bindings))
    (out / "providers.env").write_text("\n".join(env) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
