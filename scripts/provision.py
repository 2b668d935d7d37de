"""Provisions hookgate's stack in the local emulator FROM THE TRANSFORMED template.

The template is the single source of truth, and what runs locally is what AWS
would create: this runs the SAM transform (scripts/transform.py, the pinned
aws-sam-translator in .venv-tools; cached under target/infra/cache/) on
infra/template.yaml and creates, from the CloudFormation it produces:

- the DynamoDB tables (keys, indexes, TTL — moto's CloudFormation ignores TTL
  — and deletion protection, which moto honours: a DeleteTable is refused);
- the SQS queues (visibility, retention, encryption flag, redrive — in
  dependency order) and their queue policies;
- the SNS topics, the log groups and their metric filters;
- the EventBridge rules whose Condition holds (the ingress's rule only with
  `--param EventSource=…`, as on AWS). The emulator cannot invoke a Lambda target, so the
  rule that targets the ingress gets an SQS target instead (`{prefix}-IngressEvents`,
  polled by `hookgate-dev local`), carrying the template target's RetryPolicy and
  DeadLetterConfig (the RuleDlq ARN), so the local rule has AWS's settings;
- the CloudWatch alarms (`hookgate doctor` reads them).

Resources are named `{prefix}-{LogicalId}`, except where the template sets a
physical name (it always includes the stack's name; the prefix stands for
it). Parameters take the template's defaults unless overridden
(`--param MaxReceiveCount=3`): the local stack uses seconds so an outage
reaches the DLQ quickly. The six-times visibility rule is NOT enforced here
(`make infra-check` proves the defaults keep it; the functions refuse a bad
pair at start).

Prints `NAME=value` lines: the `HOOKGATE_*` variables the functions read, and
`HOOKGATE_LOCAL_FUNCTIONS=<JSON>`, each function (keyed by its cargo binary)
as the transformed template configures it: timeout, memory, SQS sources
(batch size, batching window, maximum concurrency, partial batch responses)
and schedule. `--settings-only` prints only that line (queue_url null) and
touches no emulator.
"""

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "infra/template.yaml"
CACHE = ROOT / "target/infra/cache"
REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's account
NO_VALUE = object()


# -------------------------------------------------------------- the transform
def transformed_template(template, overrides):
    """The SAM transform's CloudFormation for `template` with `overrides`.

    Runs scripts/transform.py with the interpreter that has the pinned
    aws-sam-translator (this one if it can import it, else
    $HOOKGATE_TRANSFORM_PYTHON or .venv-tools/bin/python); caches the result
    by the content of the template, the transform script and the overrides.
    """
    script = ROOT / "scripts/transform.py"
    key = hashlib.sha256()
    for part in (Path(template).read_bytes(), script.read_bytes(),
                 json.dumps(sorted(overrides.items())).encode()):
        key.update(part)
        key.update(b"\0")
    out = CACHE / f"{key.hexdigest()[:32]}.json"
    if not out.exists():
        try:
            import samtranslator  # noqa: F401
            python = sys.executable
        except ImportError:
            python = os.environ.get("HOOKGATE_TRANSFORM_PYTHON", str(ROOT / ".venv-tools/bin/python"))
        if not Path(python).exists():
            sys.exit(f"provision: no interpreter with aws-sam-translator at {python} (run `make tools`)")
        command = [python, str(script), str(template), "--out", str(out)]
        for name, value in overrides.items():
            command += ["--param", f"{name}={value}"]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(result.stderr.strip() or f"provision: {' '.join(command)} failed")
    with open(out, encoding="utf-8") as f:
        return json.load(f)


# -------------------------------------------------------------- intrinsics
class Resolver:
    """Resolves CloudFormation intrinsics against parameters and what exists locally."""

    def __init__(self, template, params):
        self.t = template
        self.params = params
        self.refs = {}   # logical id -> Ref value (name, URL, ARN)
        self.atts = {}   # (logical id, attribute) -> value

    def condition(self, name):
        return bool(self.value(self.t.get("Conditions", {})[name]))

    def value(self, v):
        if isinstance(v, list):
            return [x for x in (self.value(x) for x in v) if x is not NO_VALUE]
        if not isinstance(v, dict):
            return v
        if len(v) == 1:
            (fn, arg), = v.items()
            if fn == "Ref":
                if arg == "AWS::NoValue":
                    return NO_VALUE
                if arg in self.params:
                    return self.params[arg]
                if arg in self.refs:
                    return self.refs[arg]
                raise KeyError(f"Ref {arg}: not provisioned locally")
            if fn == "Fn::GetAtt":
                logical, attr = arg if isinstance(arg, list) else arg.split(".", 1)
                if (logical, attr) in self.atts:
                    return self.atts[(logical, attr)]
                raise KeyError(f"GetAtt {logical}.{attr}: not provisioned locally")
            if fn == "Fn::Sub":
                text, extra = (arg, {}) if isinstance(arg, str) else (arg[0], self.value(arg[1]))

                def sub(m):
                    name = m.group(1)
                    if name in extra:
                        return str(extra[name])
                    if "." in name and name not in self.params:
                        return str(self.value({"Fn::GetAtt": name.split(".", 1)}))
                    return str(self.value({"Ref": name}))
                return re.sub(r"\$\{([^!}][^}]*)\}", sub, text)
            if fn == "Fn::Join":
                return str(arg[0]).join(str(x) for x in self.value(arg[1]))
            if fn == "Fn::If":
                return self.value(arg[1] if self.condition(arg[0]) else arg[2])
            if fn == "Fn::Equals":
                a, b = self.value(arg)
                return str(a) == str(b)
            if fn == "Fn::Not":
                return not self.value(arg[0])
            if fn == "Fn::And":
                return all(self.value(arg))
            if fn == "Fn::Or":
                return any(self.value(arg))
            if fn == "Condition":
                return self.condition(arg)
        out = {}
        for k, x in v.items():
            x = self.value(x)
            if x is not NO_VALUE:
                out[k] = x
        return out


def of_type(resources, type_):
    return {k: r for k, r in resources.items() if r["Type"] == type_}


def included(resolver, resource):
    return "Condition" not in resource or resolver.condition(resource["Condition"])


def as_int(value, default=None):
    return default if value is None else int(value)


# -------------------------------------------------------------- functions
def local_functions(template, resolver, urls):
    """Each function as the transformed template configures it, by binary name."""
    resources = template["Resources"]
    functions = {}
    for logical, fn in of_type(resources, "AWS::Lambda::Function").items():
        binary = fn.get("Metadata", {}).get("BuildProperties", {}).get("Binary")
        if not binary:
            continue
        props = fn["Properties"]
        entry = {
            "timeout_secs": as_int(resolver.value(props.get("Timeout")), 3),
            "memory_mb": as_int(resolver.value(props.get("MemorySize")), 128),
        }
        sources = []
        for esm in of_type(resources, "AWS::Lambda::EventSourceMapping").values():
            p = esm["Properties"]
            if p.get("FunctionName") != {"Ref": logical}:
                continue
            queue = p["EventSourceArn"]["Fn::GetAtt"][0]
            scaling = resolver.value(p.get("ScalingConfig", {}))
            sources.append({
                "queue": queue,
                "queue_url": urls.get(queue),
                "batch_size": as_int(resolver.value(p.get("BatchSize")), 10),
                "batching_window_secs": as_int(resolver.value(p.get("MaximumBatchingWindowInSeconds")), 0),
                "max_concurrency": as_int(scaling.get("MaximumConcurrency")),
                "report_batch_item_failures": "ReportBatchItemFailures" in p.get("FunctionResponseTypes", []),
            })
        if sources:
            entry["sources"] = sorted(sources, key=lambda s: s["queue"])
        for schedule in of_type(resources, "AWS::Scheduler::Schedule").values():
            if schedule["Properties"]["Target"]["Arn"] == {"Fn::GetAtt": [logical, "Arn"]}:
                entry["schedule"] = resolver.value(schedule["Properties"]["ScheduleExpression"])
        functions[binary] = entry
    return functions


# -------------------------------------------------------------- provisioning
def provision(template, resolver, prefix, endpoint):
    import boto3

    resources = template["Resources"]
    aws = dict(endpoint_url=endpoint, region_name=REGION,
               aws_access_key_id="test", aws_secret_access_key="test")
    ddb, sqs, sns, events, logs, cw = (boto3.client(s, **aws) for s in
                                       ("dynamodb", "sqs", "sns", "events", "logs", "cloudwatch"))
    arn = lambda service, rest: f"arn:aws:{service}:{REGION}:{ACCOUNT}:{rest}"  # noqa: E731

    # Functions are not created (the local runner hosts them); their names
    # are what the alarms' FunctionName dimensions resolve to.
    for logical in of_type(resources, "AWS::Lambda::Function"):
        resolver.refs[logical] = f"{prefix}-{logical}"
        resolver.atts[(logical, "Arn")] = arn("lambda", f"function:{prefix}-{logical}")

    names = {}
    for logical, resource in of_type(resources, "AWS::DynamoDB::Table").items():
        props = resolver.value(resource["Properties"])
        name = props.get("TableName", f"{prefix}-{logical}")
        ddb.create_table(
            TableName=name,
            BillingMode=props.get("BillingMode", "PROVISIONED"),
            AttributeDefinitions=props["AttributeDefinitions"],
            KeySchema=props["KeySchema"],
            DeletionProtectionEnabled=bool(props.get("DeletionProtectionEnabled", False)),
            **({"GlobalSecondaryIndexes": props["GlobalSecondaryIndexes"]}
               if props.get("GlobalSecondaryIndexes") else {}),
        )
        ttl = props.get("TimeToLiveSpecification")
        if ttl:
            ddb.update_time_to_live(TableName=name, TimeToLiveSpecification=ttl)
        names[logical] = name
        resolver.refs[logical] = name
        resolver.atts[(logical, "Arn")] = arn("dynamodb", f"table/{name}")

    # Queues in dependency order: a redrive target before the queues naming it.
    queues = {k: r for k, r in of_type(resources, "AWS::SQS::Queue").items() if included(resolver, r)}
    urls = {}
    pending = dict(queues)
    while pending:
        ready = [k for k, r in pending.items()
                 if all(d in urls for d in _getatt_targets(r["Properties"]) if d in queues)]
        if not ready:
            sys.exit(f"provision: queues {sorted(pending)} redrive to each other")
        for logical in sorted(ready):
            props = resolver.value(pending.pop(logical)["Properties"])
            name = props.pop("QueueName", f"{prefix}-{logical}")
            props.pop("Tags", None)
            attributes = {k: (json.dumps(v) if isinstance(v, dict)
                              else str(v).lower() if isinstance(v, bool) else str(v))
                          for k, v in props.items()}
            url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
            urls[logical] = url
            resolver.refs[logical] = url
            resolver.atts[(logical, "Arn")] = arn("sqs", name)
            resolver.atts[(logical, "QueueName")] = name

    for logical, resource in of_type(resources, "AWS::SNS::Topic").items():
        name = resolver.value(resource["Properties"].get("TopicName", f"{prefix}-{logical}"))
        topic = sns.create_topic(Name=name)["TopicArn"]
        resolver.refs[logical] = topic
        resolver.atts[(logical, "TopicName")] = name

    for logical, resource in of_type(resources, "AWS::Logs::LogGroup").items():
        props = resolver.value(resource["Properties"])
        name = props.get("LogGroupName", f"{prefix}-{logical}")
        logs.create_log_group(logGroupName=name)
        if "RetentionInDays" in props:
            logs.put_retention_policy(logGroupName=name, retentionInDays=int(props["RetentionInDays"]))
        resolver.refs[logical] = name
        resolver.atts[(logical, "Arn")] = arn("logs", f"log-group:{name}:*")
    for logical, resource in of_type(resources, "AWS::Logs::MetricFilter").items():
        props = resolver.value(resource["Properties"])
        logs.put_metric_filter(
            logGroupName=props["LogGroupName"], filterName=f"{prefix}-{logical}",
            filterPattern=props["FilterPattern"],
            metricTransformations=[{"metricName": t["MetricName"], "metricNamespace": t["MetricNamespace"],
                                    "metricValue": str(t["MetricValue"])}
                                   for t in props["MetricTransformations"]])

    # Rules. The ingress's: an SQS target the local runner polls, with the
    # template target's retry policy and dead-letter queue.
    events_url = sqs.create_queue(QueueName=f"{prefix}-IngressEvents")["QueueUrl"]
    events_arn = arn("sqs", f"{prefix}-IngressEvents")
    lambda_arns = {resolver.atts[(k, "Arn")]: k for k in of_type(resources, "AWS::Lambda::Function")}
    rules = {k: r for k, r in of_type(resources, "AWS::Events::Rule").items() if included(resolver, r)}
    for logical, resource in rules.items():
        name = resolver.value(resource["Properties"].get("Name", f"{prefix}-{logical}"))
        resolver.refs[logical] = name
        resolver.atts[(logical, "Arn")] = arn("events", f"rule/{name}")
    for logical, resource in rules.items():
        props = resolver.value(resource["Properties"])
        name = resolver.refs[logical]
        events.put_rule(Name=name, EventPattern=json.dumps(props["EventPattern"]),
                        State=props.get("State", "ENABLED"))
        targets = []
        for target in props.get("Targets", []):
            local = {k: v for k, v in target.items() if k in ("Id", "Arn", "RetryPolicy", "DeadLetterConfig")}
            if target["Arn"] in lambda_arns:
                local["Arn"] = events_arn
            elif target["Arn"].split(":")[2] not in ("sqs", "logs", "events"):
                # moto 5.2.5 delivers only to SQS, log groups and buses: an SNS
                # target (the triage alert topic) makes every matching
                # PutEvents answer 500. The rule stays, without that target;
                # docs/deploy.md lists it as shown only by a deployment.
                continue
            for k, v in local.get("RetryPolicy", {}).items():
                local["RetryPolicy"][k] = int(v)
            targets.append(local)
        if targets:
            events.put_targets(Rule=name, Targets=targets)

    for logical, resource in of_type(resources, "AWS::SQS::QueuePolicy").items():
        if not included(resolver, resource):
            continue
        props = resolver.value(resource["Properties"])
        for url in props["Queues"]:
            sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps(props["PolicyDocument"])})
    for logical, resource in of_type(resources, "AWS::SNS::TopicPolicy").items():
        props = resolver.value(resource["Properties"])
        for topic in props["Topics"]:
            sns.set_topic_attributes(TopicArn=topic, AttributeName="Policy",
                                     AttributeValue=json.dumps(props["PolicyDocument"]))

    for logical, resource in of_type(resources, "AWS::CloudWatch::Alarm").items():
        if not included(resolver, resource):
            continue
        p = resolver.value(resource["Properties"])
        alarm = {"AlarmName": p.get("AlarmName", f"{prefix}-{logical}")}
        for key in ("AlarmDescription", "Namespace", "MetricName", "Statistic", "Period",
                    "EvaluationPeriods", "Threshold", "ComparisonOperator", "TreatMissingData",
                    "AlarmActions", "OKActions", "InsufficientDataActions", "DatapointsToAlarm", "Unit"):
            if key in p:
                alarm[key] = p[key]
        for key in ("Period", "EvaluationPeriods", "DatapointsToAlarm"):
            if key in alarm:
                alarm[key] = int(alarm[key])
        if "Threshold" in alarm:
            alarm["Threshold"] = float(alarm["Threshold"])
        alarm["Dimensions"] = [{"Name": d["Name"], "Value": str(d["Value"])} for d in p.get("Dimensions", [])]
        cw.put_metric_alarm(**alarm)

    return names, urls, events_url


def _getatt_targets(value):
    if isinstance(value, dict):
        if set(value) == {"Fn::GetAtt"}:
            return [value["Fn::GetAtt"][0]]
        return [t for v in value.values() for t in _getatt_targets(v)]
    if isinstance(value, list):
        return [t for v in value for t in _getatt_targets(v)]
    return []


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", help="the emulator (required unless --settings-only)")
    parser.add_argument("--prefix", default="hookgate-local")
    parser.add_argument("--param", action="append", default=[], help="Name=value")
    parser.add_argument("--template", default=str(TEMPLATE))
    parser.add_argument("--settings-only", action="store_true",
                        help="print only HOOKGATE_LOCAL_FUNCTIONS (no emulator)")
    args = parser.parse_args()
    if not args.settings_only and not args.endpoint:
        parser.error("--endpoint is required unless --settings-only")

    overrides = dict(p.split("=", 1) for p in args.param)
    template = transformed_template(args.template, overrides)
    params = {name: p.get("Default") for name, p in template.get("Parameters", {}).items()}
    unknown = set(overrides) - set(params)
    if unknown:
        sys.exit(f"provision: unknown template parameters {sorted(unknown)}")
    params.update(overrides)
    params.update({"AWS::StackName": args.prefix, "AWS::Region": REGION, "AWS::AccountId": ACCOUNT,
                   "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com"})
    resolver = Resolver(template, params)

    if args.settings_only:
        functions = local_functions(template, resolver, {})
        print("HOOKGATE_LOCAL_FUNCTIONS=" + json.dumps(functions, separators=(",", ":")))
        return

    names, urls, events_url = provision(template, resolver, args.prefix, args.endpoint)
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
        "HOOKGATE_ACTION_QUEUE_VISIBILITY_SECS": str(params["ActionQueueVisibilitySeconds"]),
        "HOOKGATE_MAX_RECEIVE_COUNT": str(params["MaxReceiveCount"]),
        "HOOKGATE_SERVICE": args.prefix,
        "HOOKGATE_LOCAL_FUNCTIONS": json.dumps(local_functions(template, resolver, urls), separators=(",", ":")),
    }
    for k, v in out.items():
        print(f"{k}={v}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
