"""Writes the fuzz targets' seed corpora (tests/fuzz/seeds/<target>/) from the
repository's fixtures (events/, config/) and the providers' documented header
shapes. Each `verify` seed is signed, as its provider signs, with a key that
is not the target's, at the targets' clock (fuzz_targets/common.rs): it
reaches the signature comparison and must fail there.

Seeds not written here (twilio-repeated-pair, repeated-callsid,
upstream-invalid-host, upstream-raw-query, reserialized-header-case,
v1-query-order, v1-query-order-host, eventbridge/float-roundtrip) are inputs the
fuzzer found, kept as regressions.

Run from the repository root: python3 tests/fuzz/seeds.py
"""

import base64
import hashlib
import hmac
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT / "tests" / "fuzz" / "seeds"
NOW = 1_800_000_000  # common::NOW, seconds
OTHER_KEY = b"seed-key-not-the-targets"
URL = "https://hooks.example.test/webhooks/twilio/ws-1"
# A seed names its scheme by its provider's name (the registry's, in
# crates/core/src/provider/), never by a position, so re-ordering the registry moves
# no seed to another scheme. Vapi is the generic `hmac` scheme.
STANDARD, SVIX, STRIPE, GITHUB, TWILIO, RETELL, ELEVENLABS, BLAND, VAPI = (
    "standard-webhooks", "svix", "stripe", "github", "twilio", "retell", "elevenlabs",
    "bland", "hmac")


def mac(data, algo=hashlib.sha256, key=OTHER_KEY):
    return hmac.new(key, data, algo)


def fixture_body(name):
    event = json.loads((ROOT / "events" / name).read_text())
    return event["body"].encode()


def delivery(scheme, headers, body, url=""):
    lines = [scheme, url] + [f"{k}: {v}" for k, v in headers] + [""]
    return "\n".join(lines).encode() + b"\n" + body


def verify_seeds():
    retell = fixture_body("apigw-v2-retell-call-ended.json")
    stripe = fixture_body("apigw-v1-stripe-payment-succeeded.json")
    contact = (ROOT / "events" / "eventbridge-connect-contact-event.json").read_bytes()
    vapi = b'{"message":{"type":"end-of-call-report","call":{"id":"call-9"}}}'
    form = b"CallSid=CA42&CallStatus=completed&From=%2B15550100&SequenceNumber=3"
    ms = NOW * 1000
    sw_sig = base64.b64encode(mac(f"msg_1.{NOW}.".encode() + retell).digest()).decode()
    twilio_sig = base64.b64encode(
        mac(URL.encode() + b"CallSidCA42CallStatuscompletedFrom+15550100SequenceNumber3",
            hashlib.sha1).digest()).decode()
    seeds = {
        "standard-webhooks": delivery(STANDARD, [
            ("webhook-id", "msg_1"), ("webhook-timestamp", str(NOW)),
            ("webhook-signature", f"v1,{sw_sig} v2,unknown")], retell),
        "svix": delivery(SVIX, [
            ("svix-id", "msg_1"), ("svix-timestamp", str(NOW)),
            ("svix-signature", f"v1,{sw_sig}")], retell),
        "stripe": delivery(STRIPE, [
            ("stripe-signature",
             f"t={NOW},v1={mac(f'{NOW}.'.encode() + stripe).hexdigest()},v0=00")], stripe),
        "github": delivery(GITHUB, [
            ("x-github-event", "issues"), ("x-github-delivery", "72d3162e-cc78-11e3"),
            ("x-github-hook-id", "42"),
            ("x-hub-signature-256", "sha256=" + mac(contact).hexdigest())], contact),
        "twilio-form": delivery(TWILIO, [
            ("content-type", "application/x-www-form-urlencoded"),
            ("x-twilio-signature", twilio_sig)], form, URL),
        "twilio-json": delivery(TWILIO, [
            ("content-type", "application/json"),
            ("x-twilio-signature", twilio_sig)], retell,
            URL + "?bodySHA256=" + hashlib.sha256(retell).hexdigest()),
        "retell": delivery(RETELL, [
            ("x-retell-signature", f"v={ms},d={mac(retell + str(ms).encode()).hexdigest()}")],
            retell),
        "elevenlabs": delivery(ELEVENLABS, [
            ("elevenlabs-signature", f"t={NOW},v0={mac(f'{NOW}.'.encode() + retell).hexdigest()}")],
            retell),
        "bland": delivery(BLAND, [("x-webhook-signature", mac(retell).hexdigest())], retell),
        "vapi": delivery(VAPI, [
            ("x-vapi-timestamp", str(NOW)),
            ("x-vapi-signature", mac(f"{NOW}.".encode() + vapi).hexdigest())], vapi),
    }
    seeds.update(catalog_seeds())
    return seeds


def provider_body(name):
    """The first delivery's body of a provider fixture (tests/fixtures/providers)."""
    fixture = json.loads((ROOT / "tests/fixtures/providers/deliveries" / f"{name}.json").read_text())
    return fixture["cases"][0]["body"].encode()


def b64(data):
    return base64.b64encode(data).decode()


def catalog_seeds():
    """The providers added with the registry, each on its fixture's body,
    signed with the other key (Telnyx's and Plivo's signatures are bytes of
    the right shape: they reach the comparison all the same)."""
    v0 = lambda body: "v0=" + mac(f"v0:{NOW}:".encode() + body).hexdigest()
    bodies = {name: provider_body(name) for name in
              ["shopify", "paddle", "square", "calendly", "slack", "zoom", "telnyx", "plivo",
               "vonage"]}
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=")
    claims = base64.urlsafe_b64encode(json.dumps(
        {"iat": NOW, "jti": "j-1", "payload_hash": hashlib.sha256(bodies["vonage"]).hexdigest()},
        separators=(",", ":")).encode()).rstrip(b"=")
    jwt_sig = base64.urlsafe_b64encode(mac(head + b"." + claims).digest()).rstrip(b"=")
    return {
        "shopify": delivery("shopify", [
            ("x-shopify-hmac-sha256", b64(mac(bodies["shopify"]).digest())),
            ("x-shopify-topic", "orders/create"), ("x-shopify-event-id", "e-1")],
            bodies["shopify"]),
        "paddle": delivery("paddle", [
            ("paddle-signature",
             f"ts={NOW};h1={mac(f'{NOW}:'.encode() + bodies['paddle']).hexdigest()}")],
            bodies["paddle"]),
        "square": delivery("square", [
            ("x-square-hmacsha256-signature", b64(mac(URL.encode() + bodies["square"]).digest()))],
            bodies["square"], URL),
        "calendly": delivery("calendly", [
            ("calendly-webhook-signature",
             f"t={NOW},v1={mac(f'{NOW}.'.encode() + bodies['calendly']).hexdigest()}")],
            bodies["calendly"]),
        "slack": delivery("slack", [
            ("x-slack-request-timestamp", str(NOW)), ("x-slack-signature", v0(bodies["slack"]))],
            bodies["slack"]),
        "zoom": delivery("zoom", [
            ("x-zm-request-timestamp", str(NOW)), ("x-zm-signature", v0(bodies["zoom"]))],
            bodies["zoom"]),
        "telnyx": delivery("telnyx", [
            ("telnyx-signature-ed25519", b64(hashlib.sha512(OTHER_KEY).digest())),
            ("telnyx-timestamp", str(NOW))], bodies["telnyx"]),
        "plivo": delivery("plivo", [
            ("content-type", "application/x-www-form-urlencoded"),
            ("x-plivo-signature-v3", b64(mac(URL.encode() + bodies["plivo"]).digest())),
            ("x-plivo-signature-v3-nonce", "05429567804466091622")], bodies["plivo"], URL),
        "vonage": delivery("vonage", [
            ("authorization", f"Bearer {(head + b'.' + claims + b'.' + jwt_sig).decode()}")],
            bodies["vonage"]),
    }


def eventbridge_seeds():
    """The Connect fixture as delivered, compacted, and with a nested detail
    whose keys and numbers a re-serialization could change."""
    contact = (ROOT / "events" / "eventbridge-connect-contact-event.json").read_bytes()
    event = json.loads(contact)
    compact = json.dumps(event, separators=(",", ":")).encode()
    event["detail"] = {"z": [1, 2.5, -0.0, 1e300, {"b": None, "a": "\u00e9"}], "a": True}
    return {"connect": contact, "compact": compact,
            "numbers": json.dumps(event, ensure_ascii=False).encode()}


def main():
    corpora = {
        "verify": verify_seeds(),
        "signed": {
            "retell": fixture_body("apigw-v2-retell-call-ended.json"),
            "stripe": fixture_body("apigw-v1-stripe-payment-succeeded.json"),
            "form": b"\x05CallSid=CA42&CallStatus=ringing&SequenceNumber=0",
            "plivo": b"\x07" + provider_body("plivo"),
            "slack": provider_body("slack"),
        },
        "twilio_form": {
            "status": b"CallSid=CA42&CallStatus=completed&From=%2B15550100&SequenceNumber=3",
            "encodings": b"From=+1555&From=%2b1555&Empty=&=novalue&CallSid=CA%34%32",
        },
        "config": {
            "example": (ROOT / "config" / "hookgate.example.toml").read_bytes(),
        },
        "eventbridge": eventbridge_seeds(),
        "apigw": {name.removesuffix(".json"): (ROOT / "events" / name).read_bytes()
                  for name in ["apigw-v2-retell-call-ended.json",
                               "apigw-v1-stripe-payment-succeeded.json",
                               "apigw-v2-ops-approve.json"]},
    }
    for target, seeds in corpora.items():
        folder = SEEDS / target
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in seeds.items():
            (folder / name).write_bytes(data)
    print(f"seeds written under {SEEDS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
