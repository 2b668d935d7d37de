"""Provisions hookgate's tables and queues in the local emulator FROM infra/template.yaml.

The template is the single source of truth: this reads its DynamoDB tables
(keys, indexes, TTL) and SQS queues (redrive, visibility) and creates them with
the same definitions, because moto has no SAM transform and ignores
TimeToLiveSpecification in CloudFormation. Parameters take the template's
defaults unless overridden (`--param MaxReceiveCount=3`): the local stack uses
seconds so an outage reaches the DLQ quickly. The emulator cannot invoke a
Lambda target, so the EventBridge rule of the ingress is created with an SQS
target (`IngressEvents`) that `hookgate local` polls.

Prints `HOOKGATE_*` variables (names and URLs), one `NAME=value` per line.
"""

import argparse
import json
import sys
from pathlib import Path

import boto3
from cfnlint.decode import cfn_yaml

ROOT = Path(__file__).resolve().parent.parent


def resolve(value, params, arns):
    """Replaces Ref to parameters and Fn::GetAtt …Arn of queues."""
    if isinstance(value, dict):
        if set(value) == {"Ref"}:
            return params[value["Ref"]]
        if set(value) == {"Fn::GetAtt"}:
            return arns[value["Fn::GetAtt"][0]]
        return {k: resolve(v, params, arns) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, params, arns) for v in value]
    return value


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--prefix", default="hookgate-local")
    parser.add_argument("--param", action="append", default=[], help="Name=value")
    args = parser.parse_args()

    template = cfn_yaml.load(str(ROOT / "infra/template.yaml"))
    params = {name: p.get("Default") for name, p in template["Parameters"].items()}
    for override in args.param:
        name, value = override.split("=", 1)
        params[name] = value
    resources = template["Resources"]
    aws = dict(endpoint_url=args.endpoint, region_name="us-east-1",
               aws_access_key_id="test", aws_secret_access_key="test")
    ddb, sqs, events = (boto3.client(s, **aws) for s in ("dynamodb", "sqs", "events"))

    names = {}
    for logical, resource in resources.items():
        if resource["Type"] != "AWS::DynamoDB::Table":
            continue
        props = resource["Properties"]
        name = f"{args.prefix}-{logical}"
        ddb.create_table(
            TableName=name,
            BillingMode=props["BillingMode"],
            AttributeDefinitions=props["AttributeDefinitions"],
            KeySchema=props["KeySchema"],
            GlobalSecondaryIndexes=props.get("GlobalSecondaryIndexes", []),
        )
        ttl = props.get("TimeToLiveSpecification")
        if ttl:
            ddb.update_time_to_live(TableName=name, TimeToLiveSpecification=ttl)
        names[logical] = name

    # Queues without a redrive policy first: the others point at their ARNs.
    queues = {k: r for k, r in resources.items() if r["Type"] == "AWS::SQS::Queue"}
    urls, arns = {}, {}
    for logical in sorted(queues, key=lambda k: "RedrivePolicy" in queues[k]["Properties"]):
        props = resolve(dict(queues[logical]["Properties"]), params, arns)
        attributes = {k: (json.dumps(v) if isinstance(v, dict) else str(v)) for k, v in props.items()}
        url = sqs.create_queue(QueueName=f"{args.prefix}-{logical}", Attributes=attributes)["QueueUrl"]
        urls[logical] = url
        arns[logical] = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]

    # The ingress's EventBridge rule, targeting a queue the local runner polls.
    ingress = resources["IngressFunction"]["Properties"]["Events"]
    events_url = sqs.create_queue(QueueName=f"{args.prefix}-IngressEvents")["QueueUrl"]
    events_arn = sqs.get_queue_attributes(QueueUrl=events_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    for logical, event in ingress.items():
        if event["Type"] != "EventBridgeRule":
            continue
        pattern = resolve(dict(event["Properties"]["Pattern"]), params, arns)
        rule = f"{args.prefix}-{logical}"
        events.put_rule(Name=rule, EventPattern=json.dumps(pattern))
        events.put_targets(Rule=rule, Targets=[{"Id": "local-ingress", "Arn": events_arn}])

    out = {
        "HOOKGATE_INBOX_TABLE": names["InboxTable"],
        "HOOKGATE_ACTIONS_TABLE": names["ActionsTable"],
        "HOOKGATE_TRIAGE_TABLE": names["TriageTable"],
        "HOOKGATE_ACTION_QUEUE_URL": urls["ActionQueue"],
        "HOOKGATE_LOCAL_DEAD_LETTER_URLS": ",".join(urls[q] for q in ("ActionDlq", "RuleDlq", "IngressFailureQueue")),
        "HOOKGATE_LOCAL_EVENTS_URL": events_url,
        "HOOKGATE_INBOX_TTL_SECS": str(params["InboxTtlSeconds"]),
        "HOOKGATE_EVENTBRIDGE_MAX_EVENT_AGE_SECS": str(params["RuleMaxEventAgeSeconds"]),
        "HOOKGATE_ASYNC_MAX_EVENT_AGE_SECS": str(params["AsyncMaxEventAgeSeconds"]),
        "HOOKGATE_ACTION_TIMEOUT_SECS": str(params["ActionTimeoutSeconds"]),
    }
    for k, v in out.items():
        print(f"{k}={v}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
