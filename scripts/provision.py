"""Provisions hookgate's stack in the local emulator FROM THE TRANSFORMED template.

The template is the single source of truth, and what runs locally is what AWS
would create: this runs the SAM transform (scripts/transform.py, the pinned
aws-sam-translator in .venv-tools; cached under target/infra/cache/) on
infra/template.yaml and creates, from the CloudFormation it produces:

- the DynamoDB tables (keys, indexes, TTL — moto's CloudFormation ignores TTL
  — deletion protection, which moto honours: a DeleteTable is refused, and
  encryption: the grants table's SSESpecification, KMS with the AWS managed
  key unless SecretsKmsKeyArn names one, as CreateTable's `Enabled`);
- the SQS queues (visibility, retention, encryption flag, redrive — in
  dependency order) and their queue policies;
- the SNS topics, the log groups and their metric filters;
- the EventBridge rules whose Condition holds (the ingress's rule only with
  `--param EventSource=…`, as on AWS). The emulator cannot invoke a Lambda target, so the
  rule that targets the ingress gets an SQS target instead (`{stack}-IngressEvents`,
  polled by `hookgate-dev local`), carrying the template target's RetryPolicy and
  DeadLetterConfig (the RuleDlq ARN), so the local rule has AWS's settings;
- the CloudWatch alarms (`hookgate doctor` reads them).

Then it registers the stack in the emulator's CloudFormation (CreateStack,
`--stack-name`, default `hookgate-local`), so `hookgate --stack NAME` finds it
as it finds a deployed one: a template of one
`AWS::CloudFormation::WaitConditionHandle` whose literal Outputs are every
Output of the template, resolved against what was created here, whose
Parameters are the template's, with the values used, and whose Metadata holds
the configuration `--config` names (`Hookgate::Config`, as `make deploy`
puts it in the deployed template), which `hookgate --stack` reads. An Output whose resource
is not created locally (the HTTP API, the functions, the config layer, the
dashboard) takes its value from `LOCAL_OUTPUTS` instead (docs/local.md, "The
local stack's outputs", lists the same; `make docs-check` compares them).
An Output with neither is refused before anything is created (exit 1, naming
it), and so is a `LOCAL_OUTPUTS` entry for an Output that resolves or that
the template lacks (`scripts/test_provision.py` proves it).

The stack's name stands for `${AWS::StackName}` and prefixes every resource:
resources are named `{stack}-{LogicalId}`, except where the template sets a
physical name (it always includes the stack's name). `--prefix` is the same
flag's older spelling. Running it again with the same name keeps what exists
(tables and their items, log groups, queues, whose attributes are set again)
and registers the stack anew (DeleteStack, then CreateStack).

Parameters take the template's defaults unless overridden
(`--param MaxReceiveCount=3`): the local stack uses seconds so an outage
reaches the DLQ quickly. The six-times visibility rule is NOT enforced here
(`make infra-check` proves the defaults keep it; the functions refuse a bad
pair at start).

Prints `NAME=value` lines: the `HOOKGATE_*` variables the functions read, and
`HOOKGATE_LOCAL_FUNCTIONS=<JSON>`, each function (keyed by its cargo binary)
as the transformed template configures it: timeout, memory, log group, SQS
sources (batch size, batching window, maximum concurrency, partial batch
responses) and schedule. `--settings-only` prints only that line (queue_url null) and
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
STACK_NAME = "hookgate-local"
WEBHOOK_URL = "http://127.0.0.1:8787"  # make local's runner (scripts/local.sh passes its own)
NO_VALUE = object()

# The Outputs of the template whose resource is not created locally, and the
# value the local stack gives each instead (`{stack}`: the stack's name;
# `{webhook_url}`: --webhook-url). docs/local.md, "The local stack's
# outputs", has the same table: `make docs-check` fails when they differ.
# Only these: an Output that resolves against what was created takes that
# value, and an entry here for one is refused, as is an Output with neither.
LOCAL_OUTPUTS = {
    "WebhookBaseUrl": "{webhook_url}",
    "OpsApiUrl": "{webhook_url}/ops",
    "ConfigLayerVersionArn": "arn:aws:lambda:us-east-1:123456789012:layer:{stack}-config:0",
    "IngressFunctionName": "{stack}-IngressFunction",
    "ActionFunctionName": "{stack}-ActionFunction",
    "DlqTriageFunctionName": "{stack}-DlqTriageFunction",
    "SweepFunctionName": "{stack}-SweepFunction",
    "OpsFunctionName": "{stack}-OpsFunction",
    "DashboardUrl": "https://dashboard.not-served-locally.invalid/{stack}-overview",
    "OperatorReadPolicyArn": "arn:aws:iam::123456789012:policy/{stack}-OperatorReadPolicy",
    "OperatorDecidePolicyArn": "arn:aws:iam::123456789012:policy/{stack}-OperatorDecidePolicy",
}


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
        # Named but not created locally (the functions: the alarms'
        # dimensions name them); `created` refuses a reference to one.
        self.named_only = set()
        self.strict = False

    def created(self, v):
        """`value(v)`, refusing (KeyError) a reference to a resource only named locally."""
        self.strict = True
        try:
            return self.value(v)
        finally:
            self.strict = False

    def _named_only(self, logical):
        if self.strict and logical in self.named_only:
            raise KeyError(f"{logical}: not created locally")

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
                self._named_only(arg)
                if arg in self.refs:
                    return self.refs[arg]
                raise KeyError(f"Ref {arg}: not provisioned locally")
            if fn == "Fn::GetAtt":
                logical, attr = arg if isinstance(arg, list) else arg.split(".", 1)
                self._named_only(logical)
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
            if fn == "Fn::FindInMap":
                name, key, attr = (str(self.value(x)) for x in arg)
                return self.t["Mappings"][name][key][attr]
            if fn.startswith("Fn::"):
                raise KeyError(f"{fn}: not resolved locally")
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
        # Where its lines go (`hookgate-dev local` writes them there); not
        # known with --settings-only, which creates nothing.
        try:
            log_group = resolver.value(props.get("LoggingConfig", {}).get("LogGroup"))
        except KeyError:
            log_group = None
        if isinstance(log_group, str):
            entry["log_group"] = log_group
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
def emulator_clients(endpoint):
    """service -> a boto3 client of the emulator at `endpoint`."""
    import boto3

    aws = dict(endpoint_url=endpoint, region_name=REGION,
               aws_access_key_id="test", aws_secret_access_key="test")
    return lambda service: boto3.client(service, **aws)


class DryRun:
    """Stands in for a boto3 client: creates nothing, and answers a create
    with what the emulator at `endpoint` would (a queue's URL, a topic's ARN),
    so what the stack's outputs resolve to is known before anything exists."""

    def __init__(self, endpoint):
        self.endpoint = (endpoint or "http://127.0.0.1").rstrip("/")

    def __getattr__(self, operation):
        def call(**kwargs):
            if operation == "create_queue":
                return {"QueueUrl": f"{self.endpoint}/{ACCOUNT}/{kwargs['QueueName']}"}
            if operation == "create_topic":
                return {"TopicArn": f"arn:aws:sns:{REGION}:{ACCOUNT}:{kwargs['Name']}"}
            return {}
        return call


def sse_specification(props):
    """CreateTable's SSESpecification from the template's: CloudFormation's
    `SSEEnabled` is the API's `Enabled`; none when the table sets none (the
    AWS owned key)."""
    sse = props.get("SSESpecification")
    if not sse:
        return {}
    spec = {"Enabled": bool(sse.get("SSEEnabled", False))}
    for key in ("SSEType", "KMSMasterKeyId"):
        if key in sse:
            spec[key] = sse[key]
    return {"SSESpecification": spec}


def error_code(error):
    """The AWS error code of a botocore ClientError (None for anything else)."""
    return getattr(error, "response", {}).get("Error", {}).get("Code")


def provision(template, resolver, stack, client):
    """Creates the resources; `client(service)` gives a boto3 client (or a DryRun)."""
    resources = template["Resources"]
    ddb, sqs, sns, events, logs, cw = (client(s) for s in
                                       ("dynamodb", "sqs", "sns", "events", "logs", "cloudwatch"))
    arn = lambda service, rest: f"arn:aws:{service}:{REGION}:{ACCOUNT}:{rest}"  # noqa: E731

    # Functions are not created (the local runner hosts them); their names
    # are what the alarms' FunctionName dimensions resolve to.
    for logical in of_type(resources, "AWS::Lambda::Function"):
        resolver.refs[logical] = f"{stack}-{logical}"
        resolver.atts[(logical, "Arn")] = arn("lambda", f"function:{stack}-{logical}")
        resolver.named_only.add(logical)

    names = {}
    for logical, resource in of_type(resources, "AWS::DynamoDB::Table").items():
        props = resolver.value(resource["Properties"])
        name = props.get("TableName", f"{stack}-{logical}")
        try:
            ddb.create_table(
                TableName=name,
                BillingMode=props.get("BillingMode", "PROVISIONED"),
                AttributeDefinitions=props["AttributeDefinitions"],
                KeySchema=props["KeySchema"],
                DeletionProtectionEnabled=bool(props.get("DeletionProtectionEnabled", False)),
                **({"GlobalSecondaryIndexes": props["GlobalSecondaryIndexes"]}
                   if props.get("GlobalSecondaryIndexes") else {}),
                **sse_specification(props),
            )
            ttl = props.get("TimeToLiveSpecification")
        except Exception as error:
            if error_code(error) != "ResourceInUseException":
                raise
            ttl = None  # a run before created it, and set its TTL: kept as it is
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
            name = props.pop("QueueName", f"{stack}-{logical}")
            props.pop("Tags", None)
            attributes = {k: (json.dumps(v) if isinstance(v, dict)
                              else str(v).lower() if isinstance(v, bool) else str(v))
                          for k, v in props.items()}
            try:
                url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
            except Exception as error:
                if error_code(error) not in ("QueueAlreadyExists", "QueueNameExists"):
                    raise
                # A run before created it with other parameters: set them again.
                url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
                sqs.set_queue_attributes(QueueUrl=url, Attributes=attributes)
            urls[logical] = url
            resolver.refs[logical] = url
            resolver.atts[(logical, "Arn")] = arn("sqs", name)
            resolver.atts[(logical, "QueueName")] = name

    for logical, resource in of_type(resources, "AWS::SNS::Topic").items():
        name = resolver.value(resource["Properties"].get("TopicName", f"{stack}-{logical}"))
        topic = sns.create_topic(Name=name)["TopicArn"]
        resolver.refs[logical] = topic
        resolver.atts[(logical, "TopicName")] = name

    for logical, resource in of_type(resources, "AWS::Logs::LogGroup").items():
        props = resolver.value(resource["Properties"])
        name = props.get("LogGroupName", f"{stack}-{logical}")
        try:
            logs.create_log_group(logGroupName=name)
        except Exception as error:
            if error_code(error) != "ResourceAlreadyExistsException":
                raise
        if "RetentionInDays" in props:
            logs.put_retention_policy(logGroupName=name, retentionInDays=int(props["RetentionInDays"]))
        resolver.refs[logical] = name
        resolver.atts[(logical, "Arn")] = arn("logs", f"log-group:{name}:*")
    for logical, resource in of_type(resources, "AWS::Logs::MetricFilter").items():
        props = resolver.value(resource["Properties"])
        logs.put_metric_filter(
            logGroupName=props["LogGroupName"], filterName=f"{stack}-{logical}",
            filterPattern=props["FilterPattern"],
            metricTransformations=[{"metricName": t["MetricName"], "metricNamespace": t["MetricNamespace"],
                                    "metricValue": str(t["MetricValue"])}
                                   for t in props["MetricTransformations"]])

    # Rules. The ingress's: an SQS target the local runner polls, with the
    # template target's retry policy and dead-letter queue.
    events_url = sqs.create_queue(QueueName=f"{stack}-IngressEvents")["QueueUrl"]
    events_arn = arn("sqs", f"{stack}-IngressEvents")
    lambda_arns = {resolver.atts[(k, "Arn")]: k for k in of_type(resources, "AWS::Lambda::Function")}
    rules = {k: r for k, r in of_type(resources, "AWS::Events::Rule").items() if included(resolver, r)}
    for logical, resource in rules.items():
        name = resolver.value(resource["Properties"].get("Name", f"{stack}-{logical}"))
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
        # As CloudFormation names an alarm the template leaves unnamed:
        # `<stack>-<LogicalId>-<12 random characters>` (here from the logical
        # id, so the same on every run); doctor and the console read only
        # names of that form (`own_alarm`, crates/core/src/doctor/alarms.rs).
        suffix = hashlib.sha256(logical.encode()).hexdigest()[:12].upper()
        alarm = {"AlarmName": p.get("AlarmName", f"{stack}-{logical}-{suffix}")}
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


# -------------------------------------------------------------- the stack
class UnresolvedOutputs(Exception):
    """The template's Outputs disagree with LOCAL_OUTPUTS; the message names each."""


def stack_outputs(template, resolver, stack, webhook_url, local=None):
    """{Output: (value, description)}: each Output of the template resolved
    against what was created locally, or its local value (`local`, default
    LOCAL_OUTPUTS). Raises UnresolvedOutputs naming every Output that has
    neither, and every local value for an Output that resolves or that the
    template lacks."""
    local = LOCAL_OUTPUTS if local is None else local
    outputs, problems = {}, []
    for name, output in template.get("Outputs", {}).items():
        if "Condition" in output and not resolver.condition(output["Condition"]):
            continue
        try:
            value = resolver.created(output["Value"])
            why = None
        except KeyError as error:
            value, why = None, error.args[0]
        if why is None and name in local:
            problems.append(f"{name}: resolves locally (to {value!r}), yet LOCAL_OUTPUTS lists it: "
                            f"remove it there and from docs/local.md")
            continue
        if why is not None:
            if name not in local:
                problems.append(f"{name}: no local value ({why}): add it to LOCAL_OUTPUTS in "
                                f"scripts/provision.py and to docs/local.md, \"The local stack's outputs\"")
                continue
            value = local[name].format(stack=stack, webhook_url=webhook_url)
        description = output.get("Description")
        outputs[name] = (str(value), description if isinstance(description, str) else None)
    for name in sorted(set(local) - set(template.get("Outputs", {}))):
        problems.append(f"{name}: LOCAL_OUTPUTS lists it, but the template has no such Output")
    if problems:
        raise UnresolvedOutputs("; ".join(problems))
    return outputs


# The template Metadata key that holds the deployed configuration (TOML
# text), where scripts/deploy.sh puts it and `hookgate --stack` reads it
# (crates/cli/src/stack.rs, CONFIG_METADATA).
CONFIG_METADATA = "Hookgate::Config"


def registration(template, params, outputs, config=None):
    """The template CreateStack is given, and its Parameters: one wait
    condition handle (no resource of its own), literal Outputs, the
    template's Parameters (as strings) with the values used, and the
    configuration the stack runs with (`config`, its text) in its Metadata."""
    names = list(template.get("Parameters", {}))
    body = {
        **({"Metadata": {CONFIG_METADATA: config}} if config is not None else {}),
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": "hookgate's local stack, registered by scripts/provision.py: "
                      "its resources exist in this emulator, its outputs name them",
        "Parameters": {name: {"Type": "String"} for name in names},
        "Resources": {"LocalStack": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
        "Outputs": {name: {"Value": value, **({"Description": d} if d else {})}
                    for name, (value, d) in outputs.items()},
    }
    values = [{"ParameterKey": name, "ParameterValue": "" if params[name] is None else str(params[name])}
              for name in names]
    return body, values


def register(cloudformation, stack, template, params, outputs, config=None):
    """Registers the stack (again: DeleteStack first when it exists)."""
    body, values = registration(template, params, outputs, config)
    try:
        cloudformation.describe_stacks(StackName=stack)
        cloudformation.delete_stack(StackName=stack)
    except Exception as error:
        if error_code(error) != "ValidationError":  # "Stack with id … does not exist"
            raise
    cloudformation.create_stack(StackName=stack, TemplateBody=json.dumps(body), Parameters=values)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", help="the emulator (required unless --settings-only)")
    parser.add_argument("--stack-name", "--prefix", dest="stack", default=STACK_NAME,
                        help="the stack's name, registered in the emulator's CloudFormation; it stands "
                             "for ${AWS::StackName} and prefixes every resource (--prefix: the same)")
    parser.add_argument("--webhook-url", default=WEBHOOK_URL,
                        help="the local runner's URL, the WebhookBaseUrl output (default: make local's)")
    parser.add_argument("--param", action="append", default=[], help="Name=value")
    parser.add_argument("--template", default=str(TEMPLATE))
    parser.add_argument("--config", help="the configuration the stack runs with, registered in its "
                                         "template's Metadata as make deploy does (hookgate --stack reads it)")
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
    params.update({"AWS::StackName": args.stack, "AWS::Region": REGION, "AWS::AccountId": ACCOUNT,
                   "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com"})
    resolver = Resolver(template, params)

    if args.settings_only:
        functions = local_functions(template, resolver, {})
        print("HOOKGATE_LOCAL_FUNCTIONS=" + json.dumps(functions, separators=(",", ":")))
        return

    # Every Output resolves, or has its local value, before anything is created.
    dry = Resolver(template, dict(params))
    provision(template, dry, args.stack, lambda service: DryRun(args.endpoint))
    try:
        stack_outputs(template, dry, args.stack, args.webhook_url)
    except UnresolvedOutputs as error:
        sys.exit(f"provision: the stack's outputs: {error}")

    client = emulator_clients(args.endpoint)
    names, urls, events_url = provision(template, resolver, args.stack, client)
    template_params = {name: params[name] for name in template.get("Parameters", {})}
    config = Path(args.config).read_text() if args.config else None
    register(client("cloudformation"), args.stack, template, template_params,
             stack_outputs(template, resolver, args.stack, args.webhook_url), config)
    out = {
        "HOOKGATE_INBOX_TABLE": names["InboxTable"],
        "HOOKGATE_ACTIONS_TABLE": names["ActionsTable"],
        "HOOKGATE_TRIAGE_TABLE": names["TriageTable"],
        "HOOKGATE_GRANTS_TABLE": names["GrantsTable"],
        "HOOKGATE_ACTION_QUEUE_URL": urls["ActionQueue"],
        "HOOKGATE_LOCAL_DEAD_LETTER_URLS": ",".join(urls[q] for q in ("ActionDlq", "RuleDlq", "IngressFailureQueue")),
        "HOOKGATE_LOCAL_EVENTS_URL": events_url,
        "HOOKGATE_INBOX_TTL_SECS": str(params["InboxTtlSeconds"]),
        "HOOKGATE_EVENTBRIDGE_MAX_EVENT_AGE_SECS": str(params["RuleMaxEventAgeSeconds"]),
        "HOOKGATE_ASYNC_MAX_EVENT_AGE_SECS": str(params["AsyncMaxEventAgeSeconds"]),
        "HOOKGATE_ACTION_TIMEOUT_SECS": str(params["ActionTimeoutSeconds"]),
        "HOOKGATE_ACTION_QUEUE_VISIBILITY_SECS": str(params["ActionQueueVisibilitySeconds"]),
        "HOOKGATE_MAX_RECEIVE_COUNT": str(params["MaxReceiveCount"]),
        "HOOKGATE_SERVICE": args.stack,
        "HOOKGATE_LOCAL_FUNCTIONS": json.dumps(local_functions(template, resolver, urls), separators=(",", ":")),
    }
    for k, v in out.items():
        print(f"{k}={v}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
