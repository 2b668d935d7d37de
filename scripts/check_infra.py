"""Structural checks on the TRANSFORMED template (what CloudFormation will create).

    python scripts/check_infra.py [TRANSFORMED_JSON] [--raw infra/template.yaml]

Reads the output of scripts/transform.py (default target/infra/template.json)
and the raw SAM template it came from, and fails (exit 1, one line per
problem) unless:

- every SQS queue is one the raw template declares (no queue made by SAM);
- the EventBridge rule that targets the ingress has RuleDlq as its target's
  dead-letter queue and a retry policy, and RuleDlq's policy admits only
  that rule (aws:SourceArn);
- every alarm notifies the alert topic; every alarm in namespace `hookgate`
  watches the `[service]` series (Dimensions = service: the stack's name);
  every required failure class has an alarm (FAILURE_CLASSES below);
- every function API Gateway invokes (a Lambda permission for
  apigateway.amazonaws.com) times out at least API_MARGIN seconds below the
  HTTP API's 30-second integration limit: otherwise the API can answer 503
  while the function still decides, and the client sends the decision again;
- each SQS event source's queue has a visibility timeout of at least six times
  its function's timeout (default parameters), and a redrive policy;
- every resource-policy statement (queue, topic, Lambda permission) granting a
  service principal is bound by aws:SourceArn / aws:SourceAccount;
- every physical name includes the stack's name;
- every function has its own explicit role and log group; every role
  statement has an alphanumeric Sid, no `*` resource, no managed policies;
  Metadata.UnexercisedReasons names only existing Sids; each SQS source's
  polling actions are granted on that exact queue;
- the grants table (GRANTS_TABLE: OAuth2 access tokens and refresh locks) is
  named by the action function's role alone (GRANTS_ACCESS: GetItem and
  UpdateItem), by no other role and no managed (operator) policy, and in no
  function's environment but the action function's (HOOKGATE_GRANTS_TABLE);
  no statement names tables by an ARN pattern (`table/*`), which would take
  it; it is encrypted with KMS, and when it names a key (KMSMasterKeyId) the
  action role may kms:Decrypt with that key through DynamoDB;
- a secret is written (SECRET_WRITES, wildcards included) by the action
  function's role alone (SECRET_WRITERS: secretsmanager:PutSecretValue, a
  rotated refresh token) and only under its own stack's names; no managed
  (operator) policy writes one;
- the webhook route has no authorizer and the ops routes use AWS_IAM;
- the GSI keys and environment contracts with the Rust code hold;
- the data outlives the stack: every table is retained on delete and on
  replacement and has deletion protection on; every queue that holds work not
  yet decided (a dead-letter target, a rule's DLQ, an on-failure destination)
  is retained; every table, queue and log group states both policies;
- every route has its own throttle (the webhook route from WebhookThrottle*),
  and an alarm counts the API's 429s;
- the triage alert rule matches only its own stack's alerts (detail.service);
- the rule that sends EventBridge events to the ingress exists only when
  EventSource is set (HasEventSource), and EventSource defaults to empty;
- no AWS endpoint is spelled `amazonaws.com` outside a service principal
  (`${AWS::URLSuffix}` works in every partition);
- MaxReceiveCount is bounded as SQS bounds it (1-1000), SecretsKmsKeyArn and
  AlarmEmail carry patterns their defaults satisfy;
- against infra/released-tables.json: no table's KeySchema, TableName, key
  attribute types, local indexes or TTL attribute changes, no index changes
  its KeySchema or Projection under the same IndexName, and at most one index
  per table is added or removed in one update;
- no account-global name (ACCOUNT_GLOBAL: a dashboard, a role, ...) lacks
  ${AWS::Region}; no `arn:aws:` in the template or in a Rust source outside
  its tests; the queues of undecided work are RetainExceptOnCreate, the tables
  Retain; the config layer's old versions are deleted; the webhook URL uses
  the optional custom domain (CustomDomainName) when one is set.

`max_stack_name(template)` is the longest stack name every physical name of
the template fits, the names CloudFormation generates unshortened
(scripts/deploy_params.py refuses longer ones).
"""

import argparse
import fnmatch
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from transform import load_yaml  # noqa: E402

STACK = {"Ref": "AWS::StackName"}
TOPIC = {"Ref": "AlertTopic"}
NAME_PROPS = {
    "AWS::DynamoDB::Table": "TableName",
    "AWS::SQS::Queue": "QueueName",
    "AWS::SNS::Topic": "TopicName",
    "AWS::Lambda::Function": "FunctionName",
    "AWS::Lambda::LayerVersion": "LayerName",
    "AWS::IAM::Role": "RoleName",
    "AWS::IAM::ManagedPolicy": "ManagedPolicyName",
    "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::CloudWatch::Alarm": "AlarmName",
    "AWS::Events::Rule": "Name",
    "AWS::Events::EventBus": "Name",
    "AWS::Scheduler::Schedule": "Name",
    "AWS::Scheduler::ScheduleGroup": "Name",
}
# AWS's length limits on the physical names this template sets.
NAME_LIMITS = {
    "AWS::DynamoDB::Table": 255, "AWS::SQS::Queue": 80, "AWS::SNS::Topic": 256,
    "AWS::Lambda::Function": 64, "AWS::Lambda::LayerVersion": 140, "AWS::IAM::Role": 64,
    "AWS::IAM::ManagedPolicy": 128, "AWS::Logs::LogGroup": 512, "AWS::CloudWatch::Alarm": 255,
    "AWS::Events::Rule": 64, "AWS::Events::EventBus": 256, "AWS::Scheduler::Schedule": 64,
    "AWS::Scheduler::ScheduleGroup": 64,
}
# Resource types that hold data or undecided work: each states both policies.
STATEFUL = ("AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::Logs::LogGroup")
RETAIN = {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}
# A queue of undecided work is kept by a stack delete and a replacing update,
# but deleted when the stack's first create rolls back (it never held a
# letter). A table is not: deletion protection refuses the rollback's
# DeleteTable (DynamoDB developer guide, "Using deletion protection"), which
# would leave the stack ROLLBACK_FAILED; it stays Retain, and
# docs/deploy.md, "A failed first deploy", says how to remove what is left.
RETAIN_QUEUE = {"DeletionPolicy": "RetainExceptOnCreate", "UpdateReplacePolicy": "Retain"}
# Resource types whose names are unique in the account across every Region
# (or across AWS): a name of one must carry ${AWS::Region} too, or be left to
# CloudFormation, or a stack of the same name in a second Region fails CREATE.
ACCOUNT_GLOBAL = {
    "AWS::CloudWatch::Dashboard": "DashboardName",
    "AWS::IAM::Role": "RoleName",
    "AWS::IAM::ManagedPolicy": "ManagedPolicyName",
    "AWS::IAM::User": "UserName",
    "AWS::IAM::Group": "GroupName",
    "AWS::IAM::InstanceProfile": "InstanceProfileName",
    "AWS::S3::Bucket": "BucketName",
    "AWS::CloudFront::Distribution": None,
    "AWS::Route53::HostedZone": "Name",
    "AWS::WAFv2::WebACL": None,
}
# Rust sources may not spell the `aws` partition: `arn:aws:` outside a test
# module (`#[cfg(test)]` and after) or a tests/ directory.
ARN_SOURCES = ("crates/core/src", "crates/adapters/src", "crates/operator/src", "crates/cli/src",
               "functions", "tests/dev/src", "tests/memory/src", "tests/testkit/src")
ENV_CONTRACT = {
    "HOOKGATE_SERVICE": STACK,
    "HOOKGATE_ACTION_QUEUE_VISIBILITY_SECS": {"Ref": "ActionQueueVisibilitySeconds"},
    "HOOKGATE_MAX_RECEIVE_COUNT": {"Ref": "MaxReceiveCount"},
    "HOOKGATE_ACTION_TIMEOUT_SECS": {"Ref": "ActionTimeoutSeconds"},
}
GSI_CONTRACT = {
    ("InboxTable", "pending"): [("pending_bucket", "HASH"), ("pending_since", "RANGE")],
    ("ActionsTable", "open"): [("open_bucket", "HASH"), ("created_at", "RANGE")],
    ("TriageTable", "by_status"): [("status_bucket", "HASH"), ("first_seen", "RANGE")],
}
SERVICE_PRINCIPAL_CONDITIONS = {"aws:sourcearn", "aws:sourceaccount"}
SID = re.compile(r"^[A-Za-z0-9]+$")
XRAY_WRITE = {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}
# Reading a secret's value: a role may do it on its own stack's names only
# (`hookgate/<stack>/`), so no stack reads another's (docs/deploy.md,
# "Secrets under the stack's name").
SECRET_READS = {"ssm:GetParameter", "ssm:GetParameters", "ssm:GetParametersByPath",
                "secretsmanager:GetSecretValue"}
STACK_SECRETS = "hookgate/${AWS::StackName}/*"
# Where a rotated refresh token is written: the only secrets any role writes.
GRANT_SECRETS = "hookgate/${AWS::StackName}/grants/*"
# Writing a secret's value or its versions: only the functions SECRET_WRITERS
# names may, each only the actions it lists, on its own stack's Secrets
# Manager names; no managed policy (the operators') may at all. Compared with
# IAM's wildcards, so `secretsmanager:*` or `ssm:Put*` counts as a write.
SECRET_WRITES = ("secretsmanager:PutSecretValue", "secretsmanager:UpdateSecret",
                 "secretsmanager:UpdateSecretVersionStage", "secretsmanager:CreateSecret",
                 "secretsmanager:DeleteSecret", "secretsmanager:RestoreSecret",
                 "secretsmanager:RotateSecret", "secretsmanager:CancelRotateSecret",
                 "ssm:PutParameter", "ssm:DeleteParameter", "ssm:DeleteParameters",
                 "ssm:LabelParameterVersion")
SECRET_WRITERS = {"ActionFunction": {"secretsmanager:PutSecretValue"}}
# The grants table (issue 48): its items hold live OAuth2 access tokens. Only
# these functions' roles may name it, each with only these actions.
GRANTS_TABLE = "GrantsTable"
GRANTS_ACCESS = {"ActionFunction": {"dynamodb:GetItem", "dynamodb:UpdateItem"}}
GRANTS_ENV = "HOOKGATE_GRANTS_TABLE"


# CloudFormation names a resource the template leaves unnamed
# `<stack>-<logical id>-<12 characters>`; past the type's limit it shortens
# the stack name and the logical id, and the name no longer starts with
# `<stack>-<logical id>-`, which the deployer's scopes name
# (scripts/check_deployer.py): CreateRole would be denied mid-deploy.
GENERATED_EXTRA = 14  # two hyphens and the 12 characters


def max_stack_name(template):
    """The longest stack name with which every physical name fits its limit,
    those CloudFormation generates (`<stack>-<logical id>-<12>`) whole."""
    longest = 128  # CloudFormation's own limit on a stack's name
    for logical, r in template["Resources"].items():
        prop = NAME_PROPS.get(r["Type"])
        value = r.get("Properties", {}).get(prop) if prop else None
        if prop and value is None:
            longest = min(longest, NAME_LIMITS[r["Type"]] - len(logical) - GENERATED_EXTRA)
        if isinstance(value, dict) and isinstance(value.get("Fn::Sub"), str):
            text = value["Fn::Sub"]
            if "${AWS::StackName}" in text and text.count("${") == 1:
                fixed = len(text) - len("${AWS::StackName}")
                longest = min(longest, NAME_LIMITS[r["Type"]] - fixed)
    return longest


def table_facts(p):
    """What of a table's properties replaces it when changed (or fails the
    update): its name, key schema, key attribute types, local indexes, TTL
    attribute; and its global indexes (checked apart: one per update)."""
    gsis = p.get("GlobalSecondaryIndexes", [])
    lsis = p.get("LocalSecondaryIndexes", [])
    keys = {k["AttributeName"] for k in p["KeySchema"]}
    for index in gsis + lsis:
        keys |= {k["AttributeName"] for k in index["KeySchema"]}
    types = {a["AttributeName"]: a["AttributeType"] for a in p.get("AttributeDefinitions", [])}
    return {
        "TableName": p.get("TableName"),
        "KeySchema": p["KeySchema"],
        "KeyAttributeTypes": {k: types.get(k) for k in sorted(keys)},
        "LocalSecondaryIndexes": {i["IndexName"]: {"KeySchema": i["KeySchema"], "Projection": i["Projection"]}
                                  for i in lsis},
        "TimeToLiveAttribute": p.get("TimeToLiveSpecification", {}).get("AttributeName"),
        "GlobalSecondaryIndexes": {g["IndexName"]: {"KeySchema": g["KeySchema"], "Projection": g["Projection"]}
                                   for g in gsis},
    }


def released_snapshot(template, about):
    """The tables as infra/released-tables.json records them (`table_facts`)."""
    tables = {k: table_facts(r["Properties"]) for k, r in sorted(template["Resources"].items())
              if r["Type"] == "AWS::DynamoDB::Table"}
    return {"_about": about, "tables": tables}


def arn_literals(root):
    """`arn:aws:` spelled in a Rust source outside its tests: (path:line, text)."""
    found = []
    for top in ARN_SOURCES:
        for path in sorted((root / top).rglob("*.rs")):
            if "tests" in path.relative_to(root / top).parts or path.name == "tests.rs":
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if line.strip().startswith("#[cfg(test)]"):
                    break
                if "arn:aws:" in line and not line.strip().startswith("//"):
                    found.append((f"{path.relative_to(root)}:{number}", line.strip()))
    return found


def strings(value, path=()):
    """Every string in `value`, with the keys that lead to it."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from strings(v, path + (k,))
    elif isinstance(value, list):
        for v in value:
            yield from strings(v, path)
    elif isinstance(value, str):
        yield path, value


def getatt(logical, attr="Arn"):
    return {"Fn::GetAtt": [logical, attr]}


def metric_is(ns, name, dims=None):
    """An alarm predicate: namespace, metric name and (a subset of) dimensions."""
    def pred(p):
        if p.get("Namespace") != ns or p.get("MetricName") != name:
            return False
        have = {d["Name"]: d["Value"] for d in p.get("Dimensions", [])}
        # a tuple lists the acceptable values (e.g. a rule's Ref or its name)
        return all(have.get(k) in (v if isinstance(v, tuple) else (v,)) for k, v in (dims or {}).items())
    return pred


def log_filter_alarm(template, alarm_class):
    """An alarm on the metric of a log metric filter whose pattern names `alarm_class`."""
    metrics = set()
    for r in template["Resources"].values():
        if r["Type"] == "AWS::Logs::MetricFilter" and alarm_class in r["Properties"]["FilterPattern"]:
            for t in r["Properties"]["MetricTransformations"]:
                metrics.add((json.dumps(t["MetricNamespace"], sort_keys=True), t["MetricName"]))

    def pred(p):
        return (json.dumps(p.get("Namespace"), sort_keys=True), p.get("MetricName")) in metrics
    return pred


def failure_classes(template, functions, rule_name):
    """(failure class, alarm predicate): each needs at least one alarm."""
    svc = {"service": STACK}
    classes = [
        ("ingress 5xx", metric_is("hookgate", "IngressUnavailable", svc)),
        ("inbox storage failure (logged alarm)", log_filter_alarm(template, "INGRESS_STORAGE_FAILED")),
        ("a destination's grant refused (logged alarm)", log_filter_alarm(template, "GRANT_REFUSED")),
        ("a rotated refresh token not stored (logged alarm)",
         log_filter_alarm(template, "GRANT_REFRESH_TOKEN_LOST")),
        ("dispatch failure", metric_is("hookgate", "DispatchFailures", svc)),
        ("uncertain actions", metric_is("hookgate", "ActionsUncertain", svc)),
        ("destination errors spike", metric_is("hookgate", "DestinationErrors", svc)),
        ("destination throttling", metric_is("hookgate", "DestinationThrottles", svc)),
        ("duplicates spike", metric_is("hookgate", "Duplicates", svc)),
        ("sweep sends failed", metric_is("hookgate", "SweepDispatchFailures", svc)),
        ("the sweep stopped running (missing data breaching)",
         lambda p: metric_is("AWS/Lambda", "Invocations", {"FunctionName": {"Ref": "SweepFunction"}})(p)
         and p.get("TreatMissingData") == "breaching" and p.get("ComparisonOperator") == "LessThanThreshold"),
        ("ingress on-failure queue arrivals",
         metric_is("AWS/SQS", "NumberOfMessagesSent", {"QueueName": getatt("IngressFailureQueue", "QueueName")})),
        ("rule dead letters", metric_is("AWS/Events", "InvocationsSentToDlq", {"RuleName": rule_name})),
        ("rule dead letter lost", metric_is("AWS/Events", "InvocationsFailedToBeSentToDlq", {"RuleName": rule_name})),
        ("ingress destination delivery failures",
         metric_is("AWS/Lambda", "DestinationDeliveryFailures", {"FunctionName": {"Ref": "IngressFunction"}})),
        ("parked letters",
         metric_is("AWS/SQS", "ApproximateNumberOfMessagesVisible", {"QueueName": getatt("TriageParkingQueue", "QueueName")})),
    ]
    for q in ("ActionDlq", "RuleDlq", "IngressFailureQueue"):
        classes.append((f"{q} age (triage cannot file)",
                        metric_is("AWS/SQS", "ApproximateAgeOfOldestMessage", {"QueueName": getatt(q, "QueueName")})))
    for fn in functions:
        for m in ("Errors", "Throttles"):
            classes.append((f"{fn} {m}", metric_is("AWS/Lambda", m, {"FunctionName": {"Ref": fn}})))
    return classes


# The HTTP API's integration timeout (its maximum), and what a function
# behind it keeps below that: its start and the way back.
API_LIMIT = 30
API_MARGIN = 5


class Checker:
    def __init__(self, template, raw, released=None):
        self.t = template
        self.raw = raw
        self.released = released
        self.res = template["Resources"]
        self.params = {k: v.get("Default") for k, v in template.get("Parameters", {}).items()}
        self.problems = []

    def fail(self, message):
        self.problems.append(message)

    def of_type(self, type_):
        return {k: r for k, r in self.res.items() if r["Type"] == type_}

    def number(self, value):
        if isinstance(value, dict) and set(value) == {"Ref"}:
            value = self.params.get(value["Ref"])
        try:
            return int(value)
        except (TypeError, ValueError):
            return None

    # -- checks -------------------------------------------------------------
    def queues(self):
        declared = {k for k, r in self.raw["Resources"].items() if r.get("Type") == "AWS::SQS::Queue"}
        for logical in self.of_type("AWS::SQS::Queue"):
            if logical not in declared:
                self.fail(f"queue {logical} is not declared in the raw template: the SAM transform made it "
                          "(a DeadLetterConfig with Type instead of Arn?)")

    def rule(self):
        rules = {k: r for k, r in self.of_type("AWS::Events::Rule").items()
                 if any(t.get("Arn") == getatt("IngressFunction") for t in r["Properties"].get("Targets", []))}
        if len(rules) != 1:
            self.fail(f"expected one EventBridge rule targeting IngressFunction, found {sorted(rules)}")
            return None
        logical, rule = next(iter(rules.items()))
        for target in rule["Properties"]["Targets"]:
            if target.get("DeadLetterConfig", {}).get("Arn") != getatt("RuleDlq"):
                self.fail(f"rule {logical}: the target's DeadLetterConfig.Arn is "
                          f"{target.get('DeadLetterConfig')}, not RuleDlq's ARN")
            if "RetryPolicy" not in target:
                self.fail(f"rule {logical}: the target has no RetryPolicy")
        name = rule["Properties"].get("Name")
        expected_arn = {"Fn::Sub": "arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:rule/"
                        + name["Fn::Sub"]} if isinstance(name, dict) and "Fn::Sub" in name else getatt(logical)
        policy = self.res.get("RuleDlqPolicy", {}).get("Properties", {})
        arns = [s.get("Condition", {}).get("ArnEquals", {}).get("aws:SourceArn")
                for s in policy.get("PolicyDocument", {}).get("Statement", [])]
        if arns != [expected_arn] and arns != [getatt(logical)]:
            self.fail(f"RuleDlqPolicy: aws:SourceArn {arns} is not the rule {logical}'s ARN")
        return ({"Ref": logical}, name)

    def alarms(self, functions, rule_name):
        alarms = self.of_type("AWS::CloudWatch::Alarm")
        for logical, a in alarms.items():
            p = a["Properties"]
            if TOPIC not in p.get("AlarmActions", []):
                self.fail(f"alarm {logical}: AlarmActions does not notify AlertTopic")
            if p.get("Namespace") == "hookgate":
                dims = p.get("Dimensions", [])
                if dims != [{"Name": "service", "Value": STACK}]:
                    self.fail(f"alarm {logical}: hookgate metric {p.get('MetricName')} without the "
                              f"[service] dimension (= stack name): it watches a series no code emits "
                              f"(Dimensions: {dims})")
            if "Metrics" in p:
                self.fail(f"alarm {logical}: metric-math alarms are not checked; use a single metric")
        for name, pred in failure_classes(self.t, functions, rule_name):
            if not any(pred(a["Properties"]) for a in alarms.values()):
                self.fail(f"no alarm for the failure class: {name}")

    def sources(self, functions):
        queues = self.of_type("AWS::SQS::Queue")
        for logical, esm in self.of_type("AWS::Lambda::EventSourceMapping").items():
            p = esm["Properties"]
            source = p.get("EventSourceArn", {}).get("Fn::GetAtt", [None])[0]
            fn = p.get("FunctionName", {}).get("Ref")
            if source not in queues or fn not in functions:
                self.fail(f"event source {logical}: source {source} / function {fn} not in the template")
                continue
            qp = queues[source]["Properties"]
            visibility = self.number(qp.get("VisibilityTimeout", 30))
            timeout = self.number(functions[fn]["Properties"].get("Timeout", 3))
            if visibility is None or timeout is None or visibility < 6 * timeout:
                self.fail(f"queue {source}: visibility {visibility} s < 6 x {fn}'s timeout {timeout} s "
                          "(default parameters)")
            if "RedrivePolicy" not in qp:
                self.fail(f"queue {source} (source of {fn}) has no RedrivePolicy")
            if "ReportBatchItemFailures" not in p.get("FunctionResponseTypes", []):
                self.fail(f"event source {logical}: no ReportBatchItemFailures")
            role = functions[fn]["Properties"].get("Role", {}).get("Fn::GetAtt", [None])[0]
            granted = set()
            for s in self.statements(role):
                resources = s.get("Resource")
                resources = resources if isinstance(resources, list) else [resources]
                if getatt(source) in resources:
                    actions = s.get("Action")
                    granted |= set(actions if isinstance(actions, list) else [actions])
            missing = {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"} - granted
            if missing:
                self.fail(f"role {role} lacks {sorted(missing)} on {source} (event source {logical})")
        actions = self.res.get("ActionFunctionActions", {}).get("Properties", {})
        if actions.get("BatchSize") != 10 or "MaximumConcurrency" not in actions.get("ScalingConfig", {}):
            self.fail("ActionFunctionActions: BatchSize 10 and ScalingConfig.MaximumConcurrency expected")
        # the action queue against the action function, whatever the mapping says
        vis = self.number(self.params.get("ActionQueueVisibilitySeconds"))
        tmo = self.number(self.params.get("ActionTimeoutSeconds"))
        if vis is None or tmo is None or vis < 6 * tmo:
            self.fail(f"default ActionQueueVisibilitySeconds {vis} < 6 x ActionTimeoutSeconds {tmo}")
        for logical, q in queues.items():
            qp = q["Properties"]
            if "RedrivePolicy" not in qp and not any(
                    a["Properties"].get("MetricName") == "ApproximateNumberOfMessagesVisible"
                    and {"Name": "QueueName", "Value": getatt(logical, "QueueName")} in a["Properties"].get("Dimensions", [])
                    for a in self.of_type("AWS::CloudWatch::Alarm").values()):
                self.fail(f"queue {logical}: no redrive and no depth alarm (a letter could sit unseen)")

    def api_timeouts(self, functions):
        behind = {r["Properties"].get("FunctionName", {}).get("Ref")
                  for r in self.of_type("AWS::Lambda::Permission").values()
                  if r["Properties"].get("Principal") == "apigateway.amazonaws.com"}
        for fn in sorted(f for f in behind if f in functions):
            timeout = self.number(functions[fn]["Properties"].get("Timeout", 3))
            if timeout is None or timeout > API_LIMIT - API_MARGIN:
                self.fail(f"{fn}: timeout {timeout} s, behind the HTTP API's {API_LIMIT} s integration "
                          f"limit: at most {API_LIMIT - API_MARGIN} s, so the API never answers while "
                          "the function still decides (a client would send the decision again)")

    def resource_policies(self):
        docs = []
        for k, r in self.res.items():
            if r["Type"] in ("AWS::SQS::QueuePolicy", "AWS::SNS::TopicPolicy"):
                docs += [(k, s) for s in r["Properties"]["PolicyDocument"]["Statement"]]
            if r["Type"] == "AWS::Lambda::Permission":
                p = r["Properties"]
                if str(p.get("Principal", "")).endswith(".amazonaws.com") and not (
                        p.get("SourceArn") or p.get("SourceAccount")):
                    self.fail(f"permission {k}: service principal {p['Principal']} without SourceArn/SourceAccount")
        for k, s in docs:
            if not SID.match(str(s.get("Sid", ""))):
                self.fail(f"{k}: a statement without an alphanumeric Sid")
            principal = s.get("Principal", {})
            if isinstance(principal, dict) and "Service" in principal:
                keys = {key.lower() for op in s.get("Condition", {}).values() for key in op}
                if not keys & SERVICE_PRINCIPAL_CONDITIONS:
                    self.fail(f"{k} statement {s.get('Sid')}: service principal {principal['Service']} "
                              "without aws:SourceArn / aws:SourceAccount")

    def names(self):
        for k, r in self.res.items():
            prop = NAME_PROPS.get(r["Type"])
            if prop is None or prop not in r.get("Properties", {}):
                continue
            value = r["Properties"][prop]
            text = json.dumps(value)
            if "${AWS::StackName}" not in text and '"AWS::StackName"' not in text:
                self.fail(f"{k}: {prop} {text} does not include the stack name (two stacks would collide)")

    def statements(self, role):
        out = []
        for policy in self.res.get(role, {}).get("Properties", {}).get("Policies", []):
            for s in policy["PolicyDocument"]["Statement"]:
                if isinstance(s, dict) and set(s) == {"Fn::If"}:
                    s = s["Fn::If"][1]  # the conditional grant, as if the condition held
                if isinstance(s, dict) and s:
                    out.append(s)
        return out

    def roles(self, functions):
        roles = self.of_type("AWS::IAM::Role")
        for k, r in roles.items():
            p = r["Properties"]
            if p.get("ManagedPolicyArns"):
                self.fail(f"role {k}: managed policies {p['ManagedPolicyArns']} (use explicit statements)")
            sids = []
            for s in p["AssumeRolePolicyDocument"]["Statement"] + self.statements(k):
                sid = str(s.get("Sid", ""))
                if not SID.match(sid):
                    self.fail(f"role {k}: a statement without an alphanumeric Sid: {json.dumps(s)[:120]}")
                sids.append(sid)
                resources = s.get("Resource", [])
                actions = s.get("Action", [])
                actions = actions if isinstance(actions, list) else [actions]
                # X-Ray's write actions take no resource: "*" is their only form.
                xray = bool(actions) and set(actions) <= XRAY_WRITE
                if "*" in (resources if isinstance(resources, list) else [resources]) and not xray:
                    self.fail(f"role {k} statement {sid}: Resource '*'")
                if set(actions) & SECRET_READS:
                    for resource in resources if isinstance(resources, list) else [resources]:
                        text = json.dumps(resource)
                        sub = resource.get("Fn::Sub") if isinstance(resource, dict) else None
                        arn = sub[0] if isinstance(sub, list) else sub
                        if not isinstance(arn, str) or not re.search(
                                r":(parameter/|secret:)" + re.escape(STACK_SECRETS) + "$", arn):
                            self.fail(f"role {k} statement {sid}: reads secrets outside "
                                      f"{STACK_SECRETS} ({text}): another stack's would be readable")
            reasons = r.get("Metadata", {}).get("UnexercisedReasons", {})
            for sid in set(reasons) - set(sids):
                self.fail(f"role {k}: UnexercisedReasons names {sid}, which is no statement's Sid")
            for sid, why in reasons.items():
                if not isinstance(why, str) or not why.strip() or "\n" in why.strip():
                    self.fail(f"role {k}: UnexercisedReasons.{sid} must be a one-line reason")
        for fn, f in functions.items():
            p = f["Properties"]
            role = p.get("Role", {}).get("Fn::GetAtt", [None])[0] if isinstance(p.get("Role"), dict) else None
            if role not in roles:
                self.fail(f"function {fn}: Role is not an AWS::IAM::Role of this template")
                continue
            users = [g for g, o in functions.items() if o["Properties"].get("Role") == p["Role"]]
            if len(users) > 1:
                self.fail(f"role {role} is shared by {users}")
            group = p.get("LoggingConfig", {}).get("LogGroup", {}).get("Ref")
            if group not in self.of_type("AWS::Logs::LogGroup"):
                self.fail(f"function {fn}: LoggingConfig.LogGroup is not a log group of this template")
                continue
            for s in self.statements(role):
                actions = s.get("Action")
                actions = actions if isinstance(actions, list) else [actions]
                if any(a.startswith("logs:") for a in actions) and s.get("Resource") != getatt(group):
                    self.fail(f"role {role} statement {s.get('Sid')}: logs actions outside {group}")
            env = p.get("Environment", {}).get("Variables", {})
            for var, value in ENV_CONTRACT.items():
                if env.get(var) != value:
                    self.fail(f"function {fn}: env {var} is {env.get(var)}, expected {value}")

    def policy_documents(self):
        """(kind, logical id, statement) of every role's and managed policy's
        statements, a conditional one as if its condition held."""
        out = []
        for k in self.of_type("AWS::IAM::Role"):
            out += [("role", k, s) for s in self.statements(k)]
        for k, r in self.of_type("AWS::IAM::ManagedPolicy").items():
            for s in r["Properties"]["PolicyDocument"]["Statement"]:
                if isinstance(s, dict) and set(s) == {"Fn::If"}:
                    s = s["Fn::If"][1]
                if isinstance(s, dict) and s:
                    out.append(("policy", k, s))
        return out

    def function_roles(self, functions):
        """{role logical id: function logical id}."""
        roles = {}
        for fn, f in functions.items():
            role = f["Properties"].get("Role")
            if isinstance(role, dict) and "Fn::GetAtt" in role:
                roles[role["Fn::GetAtt"][0]] = fn
        return roles

    def secret_writes(self, functions):
        # Only the action function writes a secret (a rotated refresh
        # token), only PutSecretValue, only its own stack's names.
        owners = self.function_roles(functions)
        for kind, k, s in self.policy_documents():
            actions = s.get("Action", [])
            actions = actions if isinstance(actions, list) else [actions]
            writes = sorted({w for w in SECRET_WRITES for a in actions
                             if isinstance(a, str) and fnmatch.fnmatchcase(w.lower(), a.lower())})
            if not writes:
                continue
            sid = s.get("Sid")
            allowed = SECRET_WRITERS.get(owners.get(k), set()) if kind == "role" else set()
            if not set(writes) <= allowed:
                who = f"role {k} (function {owners[k]})" if k in owners else f"{kind} {k}"
                writers = "; ".join(f"{f}: {' '.join(sorted(a))}" for f, a in SECRET_WRITERS.items())
                self.fail(f"{who} statement {sid}: writes a secret ({', '.join(writes)}): only the roles "
                          f"of {writers} may")
                continue
            resources = s.get("Resource", [])
            for resource in resources if isinstance(resources, list) else [resources]:
                sub = resource.get("Fn::Sub") if isinstance(resource, dict) else None
                arn = sub[0] if isinstance(sub, list) else sub
                if not isinstance(arn, str) or not re.search(r":secret:" + re.escape(GRANT_SECRETS) + "$", arn):
                    self.fail(f"role {k} statement {sid}: writes secrets outside Secrets Manager's "
                              f"{GRANT_SECRETS} ({json.dumps(resource)}): a webhook's signing secret, "
                              f"or another stack's, could be overwritten")

    def grants_table(self, functions):
        # The grants table holds live access tokens: the action function's
        # role alone names it, with GetItem and UpdateItem; nothing names
        # tables by a pattern that would take it.
        table = self.res.get(GRANTS_TABLE)
        if table is None or table["Type"] != "AWS::DynamoDB::Table":
            self.fail(f"no table {GRANTS_TABLE} (the OAuth2 grants' tokens and refresh locks)")
            return
        owners = self.function_roles(functions)
        named = re.compile(r'"' + GRANTS_TABLE + r'"|\$\{' + GRANTS_TABLE + r'[.}]')
        for kind, k, s in self.policy_documents():
            resources = s.get("Resource", [])
            resources = resources if isinstance(resources, list) else [resources]
            actions = s.get("Action", [])
            actions = set(actions if isinstance(actions, list) else [actions])
            sid = s.get("Sid")
            for resource in resources:
                text = resource.get("Fn::Sub") if isinstance(resource, dict) else resource
                text = text[0] if isinstance(text, list) else text
                if isinstance(text, str) and ":table/" in text and "*" in text.split(":table/", 1)[1]:
                    self.fail(f"{kind} {k} statement {sid}: names tables by a pattern ({text}), which "
                              f"takes the grants table: name each table")
            if not any(named.search(json.dumps(r)) for r in resources):
                continue
            allowed = GRANTS_ACCESS.get(owners.get(k), set()) if kind == "role" else set()
            if not allowed:
                self.fail(f"{kind} {k} statement {sid}: names the grants table ({GRANTS_TABLE}), which "
                          f"only {', '.join(GRANTS_ACCESS)}'s role may: its items hold access tokens")
            elif not actions <= allowed:
                self.fail(f"role {k} statement {sid}: {', '.join(sorted(actions - allowed))} on the grants "
                          f"table; only {', '.join(sorted(allowed))}")
        for fn, f in functions.items():
            value = f["Properties"].get("Environment", {}).get("Variables", {}).get(GRANTS_ENV)
            if fn in GRANTS_ACCESS and value != {"Ref": GRANTS_TABLE}:
                self.fail(f"function {fn}: env {GRANTS_ENV} is {value}, expected {{'Ref': '{GRANTS_TABLE}'}}")
            elif fn not in GRANTS_ACCESS and value is not None:
                self.fail(f"function {fn}: env {GRANTS_ENV} names the grants table, which it may not read")
        sse = table["Properties"].get("SSESpecification", {})
        if sse.get("SSEEnabled") is not True or sse.get("SSEType") != "KMS":
            self.fail(f"{GRANTS_TABLE}: SSESpecification {sse}: not SSEEnabled with SSEType KMS")
        key = sse.get("KMSMasterKeyId")
        if isinstance(key, dict) and set(key) == {"Fn::If"}:
            key = key["Fn::If"][1]
        if key is None:
            return
        via = {"Fn::Sub": "dynamodb.${AWS::Region}.${AWS::URLSuffix}"}
        for fn in GRANTS_ACCESS:
            role = next((r for r, f in owners.items() if f == fn), None)
            decrypts = [s for s in self.statements(role)
                        if "kms:Decrypt" in (s.get("Action") if isinstance(s.get("Action"), list)
                                             else [s.get("Action")])
                        and s.get("Resource") == key
                        and via in (lambda v: v if isinstance(v, list) else [v])(
                            s.get("Condition", {}).get("StringEquals", {}).get("kms:ViaService"))]
            if not decrypts:
                self.fail(f"role {role}: no kms:Decrypt on the grants table's key {key} through "
                          "dynamodb.${AWS::Region}.${AWS::URLSuffix}: the function could not read its table")

    def routes(self):
        apis = self.of_type("AWS::ApiGatewayV2::Api")
        for k, api in apis.items():
            paths = api["Properties"].get("Body", {}).get("paths", {})
            for path, methods in paths.items():
                for method, op in methods.items():
                    security = op.get("security")
                    if path.startswith("/webhooks/") and security:
                        self.fail(f"{k} {method} {path}: has an authorizer {security}; signatures are the auth")
                    if path.startswith("/ops/") and security != [{"AWS_IAM": []}]:
                        self.fail(f"{k} {method} {path}: not AWS_IAM-authorized ({security})")

    def tables(self):
        for (table, index), keys in GSI_CONTRACT.items():
            gsis = self.res.get(table, {}).get("Properties", {}).get("GlobalSecondaryIndexes", [])
            found = [g for g in gsis if g["IndexName"] == index]
            have = [(k["AttributeName"], k["KeyType"]) for k in found[0]["KeySchema"]] if found else None
            if have != keys:
                self.fail(f"{table} index {index}: keys {have}, expected {keys}")

    def retention(self):
        queues = self.of_type("AWS::SQS::Queue")
        undecided = set()
        for r in self.res.values():
            p = r.get("Properties", {})
            targets = [p.get("RedrivePolicy", {}).get("deadLetterTargetArn"),
                       p.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination")]
            targets += [t.get("DeadLetterConfig", {}).get("Arn") for t in p.get("Targets", [])]
            undecided |= {t["Fn::GetAtt"][0] for t in targets if isinstance(t, dict) and "Fn::GetAtt" in t}
        for k, r in self.res.items():
            if r["Type"] not in STATEFUL:
                continue
            if "DeletionPolicy" not in r or "UpdateReplacePolicy" not in r:
                self.fail(f"{k}: no explicit DeletionPolicy and UpdateReplacePolicy "
                          "(the default deletes its data with the stack)")
            if r["Type"] == "AWS::DynamoDB::Table" or k in undecided & set(queues):
                table = r["Type"] == "AWS::DynamoDB::Table"
                what = "its data" if table else "undecided work"
                for key, want in (RETAIN if table else RETAIN_QUEUE).items():
                    if r.get(key) == "RetainExceptOnCreate" and table:
                        self.fail(f"{k}: {key} RetainExceptOnCreate on a deletion-protected table: a "
                                  "failed first deploy's rollback cannot delete it and ends ROLLBACK_FAILED; "
                                  "keep Retain (docs/deploy.md, \"A failed first deploy\")")
                    elif r.get(key) == "Retain" and want == "RetainExceptOnCreate":
                        self.fail(f"{k}: {key} Retain, not RetainExceptOnCreate: a failed first deploy "
                                  "would leave the empty queue behind")
                    elif r.get(key) != want:
                        self.fail(f"{k}: {key} {r.get(key)}, not {want}: a stack delete or a replacing "
                                  f"update would delete {what}")
            if r["Type"] == "AWS::DynamoDB::Table" and r["Properties"].get("DeletionProtectionEnabled") is not True:
                self.fail(f"{k}: DeletionProtectionEnabled is not true")

    def throttles(self):
        stages = self.of_type("AWS::ApiGatewayV2::Stage")
        for k, api in self.of_type("AWS::ApiGatewayV2::Api").items():
            keys = set()
            for path, methods in api["Properties"].get("Body", {}).get("paths", {}).items():
                for method in methods:
                    verb = "ANY" if method == "x-amazon-apigateway-any-method" else method.upper()
                    keys.add(f"{verb} {path}")
            stage = [s["Properties"] for s in stages.values() if s["Properties"].get("ApiId") == {"Ref": k}]
            settings = stage[0].get("RouteSettings", {}) if stage else {}
            for key in sorted(keys):
                limits = settings.get(key, {})
                if "ThrottlingRateLimit" not in limits or "ThrottlingBurstLimit" not in limits:
                    self.fail(f"{k}: route {key} has no throttle (RouteSettings rate and burst): "
                              "a flood takes the account's concurrency")
                elif key.startswith("POST /webhooks/") and limits["ThrottlingRateLimit"] != {"Ref": "WebhookThrottleRate"}:
                    self.fail(f"{k}: route {key}'s rate is not the WebhookThrottleRate parameter")
        access = [k for k, g in self.of_type("AWS::Logs::LogGroup").items()
                  if any(s["Properties"].get("AccessLogSettings", {}).get("DestinationArn") == getatt(k)
                         for s in stages.values())]
        counted = [f for f in self.of_type("AWS::Logs::MetricFilter").values()
                   if f["Properties"]["LogGroupName"] in [{"Ref": g} for g in access]
                   and '"429"' in f["Properties"]["FilterPattern"]]
        alarmed = any(log_filter_alarm(self.t, '"429"')(a["Properties"])
                      for a in self.of_type("AWS::CloudWatch::Alarm").values())
        if not counted or not alarmed:
            self.fail("no alarm on the API's throttled requests (a metric filter on the access log's "
                      "429s): a limit would silently turn into providers giving up")

    def alert_rule(self):
        # Exactly the tests' alert rule (the pattern literal in
        # tests/integration/src/pipeline.rs, for the service the tests run as), with the
        # stack's name: what the tests show delivered and refused is this.
        source = (ROOT / "tests/integration/src/pipeline.rs").read_text(encoding="utf-8")
        literal = re.search(r'r#"(\{"source":\["hookgate"\].*?)"#', source)
        wanted = json.loads(literal.group(1)) if literal else None
        if wanted is None or wanted.get("detail", {}).get("service") != ["hookgate"]:
            self.fail("tests/integration/src/pipeline.rs holds no alert rule pattern for the service hookgate")
            return
        wanted["detail"]["service"] = [STACK]
        for k, r in self.of_type("AWS::Events::Rule").items():
            p = r["Properties"]
            if any(t.get("Arn") == TOPIC for t in p.get("Targets", [])):
                pattern = p.get("EventPattern", {})
                if pattern.get("detail", {}).get("service") != [STACK]:
                    self.fail(f"rule {k}: sends alerts to AlertTopic without matching detail.service = "
                              f"the stack's name ({pattern}): every stack's alerts would reach this topic")
                elif pattern != wanted:
                    self.fail(f"rule {k}: pattern {pattern}, not {wanted} (the tests' alert rule)")

    def event_rule(self, logical):
        rule = self.res.get(logical, {})
        if rule.get("Condition") != "HasEventSource":
            self.fail(f"rule {logical}: not conditional on HasEventSource: with no source mapped, "
                      "every event it forwards fails and is held")
        condition = self.t.get("Conditions", {}).get("HasEventSource")
        if condition != {"Fn::Not": [{"Fn::Equals": [{"Ref": "EventSource"}, ""]}]}:
            self.fail(f"condition HasEventSource is {condition}, not EventSource != ''")
        if self.params.get("EventSource") != "":
            self.fail(f"parameter EventSource defaults to {self.params.get('EventSource')!r}, not empty "
                      "(no rule unless a deployment maps a source)")

    def partition(self):
        for path, value in strings(self.res):
            if "amazonaws.com" in value and "Principal" not in path:
                self.fail(f"{'.'.join(map(str, path[:2]))}: {value!r} names amazonaws.com; "
                          "use ${AWS::URLSuffix} (other partitions have other suffixes)")
            if "arn:aws:" in value:
                self.fail(f"{'.'.join(map(str, path[:2]))}: {value!r} spells arn:aws:; "
                          "use arn:${AWS::Partition}: (other partitions have other names)")

    def account_global(self):
        for k, r in self.res.items():
            if r["Type"] not in ACCOUNT_GLOBAL:
                continue
            prop = ACCOUNT_GLOBAL[r["Type"]]
            value = r.get("Properties", {}).get(prop) if prop else None
            if value is None:
                continue
            text = value.get("Fn::Sub") if isinstance(value, dict) else value
            if not isinstance(text, str) or "${AWS::Region}" not in text:
                self.fail(f"{k}: {r['Type']} is named in the whole account ({prop} {value}) without "
                          "${AWS::Region}: a stack of the same name in a second Region fails CREATE; "
                          "add the Region or leave the name to CloudFormation")

    def custom_domain(self):
        # An optional domain for the webhook URL, which then outlives the API.
        domains = {k: r for k, r in self.of_type("AWS::ApiGatewayV2::DomainName").items()
                   if r.get("Condition") == "HasCustomDomain"
                   and r["Properties"].get("DomainName") == {"Ref": "CustomDomainName"}}
        if "CustomDomainName" not in self.params or "CustomDomainCertificateArn" not in self.params:
            self.fail("no CustomDomainName / CustomDomainCertificateArn parameters: the webhook URL "
                      "dies with the API")
            return
        mapped = [m for m in self.of_type("AWS::ApiGatewayV2::ApiMapping").values()
                  if m["Properties"].get("DomainName", {}).get("Ref") in domains
                  and m["Properties"].get("ApiId") == {"Ref": "WebhookApi"}]
        if not domains or not mapped:
            self.fail("no domain (AWS::ApiGatewayV2::DomainName on CustomDomainName, under HasCustomDomain) "
                      "mapped to WebhookApi")
        outputs = self.t.get("Outputs", {})
        url = outputs.get("WebhookBaseUrl", {}).get("Value")
        if not (isinstance(url, dict) and url.get("Fn::If", [None])[0] == "HasCustomDomain"
                and url["Fn::If"][1] == {"Fn::Sub": "https://${CustomDomainName}"}):
            self.fail(f"output WebhookBaseUrl is {url}: not the custom domain when one is set")
        target = outputs.get("WebhookDomainTarget", {})
        if not (domains and target.get("Value") == getatt(next(iter(domains)), "RegionalDomainName")):
            self.fail("output WebhookDomainTarget (the domain's regional target, for DNS) is missing")

    def builds(self):
        """Each Rust function built in its own crate's folder, which holds its
        binary: `cargo lambda build --bin` run there resolves that package's
        features alone, as `make lambda-trees` checks them."""
        for k, r in self.raw.get("Resources", {}).items():
            meta = r.get("Metadata") or {}
            if r.get("Type") != "AWS::Serverless::Function" or meta.get("BuildMethod") != "rust-cargolambda":
                continue
            binary = (meta.get("BuildProperties") or {}).get("Binary")
            uri = (r.get("Properties") or {}).get("CodeUri")
            folder = (ROOT / "infra" / str(uri)).resolve() if isinstance(uri, str) else None
            manifest = folder / "Cargo.toml" if folder else None
            if not manifest or folder.parent != (ROOT / "functions").resolve() or not manifest.is_file():
                self.fail(f"{k}: CodeUri {uri!r} is not a function crate's folder (functions/<crate>/): "
                          "built from the workspace, it takes every member's features")
            elif f'name = "{binary}"' not in manifest.read_text(encoding="utf-8"):
                self.fail(f"{k}: {manifest.relative_to(ROOT)} declares no binary {binary!r}")

    def layers(self):
        for k, r in self.of_type("AWS::Lambda::LayerVersion").items():
            if r.get("DeletionPolicy") != "Delete":
                self.fail(f"{k}: layer DeletionPolicy {r.get('DeletionPolicy')}, not Delete: every "
                          "config version's layer would be kept forever (RetentionPolicy: Delete)")

    def parameters(self):
        params = self.t.get("Parameters", {})
        receive = params.get("MaxReceiveCount", {})
        low, high = self.number(receive.get("MinValue")), self.number(receive.get("MaxValue"))
        if low is None or high is None or low < 1 or high > 1000:
            self.fail(f"parameter MaxReceiveCount: MinValue/MaxValue {receive.get('MinValue')}/"
                      f"{receive.get('MaxValue')}, not within SQS's 1-1000")
        # Each pattern takes its default and a good value, and refuses the typos.
        samples = {
            "SecretsKmsKeyArn": (["arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"],
                                 ["alias/hookgate", "arn:aws:kms:eu-west-1:111122223333:alias/hookgate",
                                  "1234abcd-12ab-34cd-56ef-1234567890ab", "arn:aws:secretsmanager:eu-west-1:1:x"]),
            "AlarmEmail": (["ops@example.com"], ["ops-at-example.com", "ops@example", "a@b.co,c@d.co"]),
        }
        for name, (good, bad) in samples.items():
            p = params.get(name, {})
            pattern = p.get("AllowedPattern")
            if not pattern:
                self.fail(f"parameter {name}: no AllowedPattern (a typo deploys and fails later)")
                continue
            for value in [str(p.get("Default", ""))] + good:
                if not re.fullmatch(pattern, value):
                    self.fail(f"parameter {name}: its AllowedPattern refuses {value!r}")
            for value in bad:
                if re.fullmatch(pattern, value):
                    self.fail(f"parameter {name}: its AllowedPattern takes {value!r}")

    def outputs(self, functions):
        # The operator tools find the stack from its outputs: every queue,
        # function and log group, and the rest they need, has one.
        outputs = self.t.get("Outputs", {})
        refs = {json.dumps(o.get("Value"), sort_keys=True) for o in outputs.values()}
        kinds = [("queue", self.of_type("AWS::SQS::Queue")), ("function", functions),
                 ("log group", self.of_type("AWS::Logs::LogGroup"))]
        for kind, resources in kinds:
            for logical in resources:
                if json.dumps({"Ref": logical}) not in refs:
                    self.fail(f"{kind} {logical} has no output (the operator tools find it there)")
        for name in ("WebhookBaseUrl", "OpsApiUrl", "EventBusName", "Service", "AlarmNamePrefix",
                     "ConfigLayerVersionArn", "InboxTableName", "ActionsTableName", "TriageTableName",
                     "GrantsTableName", "AlertTopicArn", "DashboardUrl"):
            if name not in outputs:
                self.fail(f"output {name} is missing (the operator tools read it)")

    def tracing(self, functions):
        # Active tracing only when the stack asks for it, and then each
        # role may write its segments (a role without the grant loses them).
        for fn, f in functions.items():
            mode = f["Properties"].get("TracingConfig", {}).get("Mode")
            if mode != {"Fn::If": ["TracingEnabled", "Active", "PassThrough"]}:
                self.fail(f"function {fn}: TracingConfig.Mode is {mode}, expected Active only under "
                          "TracingEnabled")
            role = f["Properties"].get("Role", {}).get("Fn::GetAtt", [None])[0]
            grants = [s for s in self.statements(role) if s.get("Sid") == "XRayWrite"]
            if not grants:
                self.fail(f"function {fn}: its role {role} cannot write X-Ray segments when tracing is on")

    def logging(self, functions):
        # Lambda's JSON log format with its levels: the application level
        # never above INFO, since the metric lines (EMF) carry no level and
        # Lambda counts such a line as INFO: WARN would drop every metric.
        for fn, f in functions.items():
            config = f["Properties"].get("LoggingConfig", {})
            want = {"LogFormat": "JSON", "ApplicationLogLevel": {"Ref": "ApplicationLogLevel"},
                    "SystemLogLevel": {"Ref": "SystemLogLevel"}}
            for key, value in want.items():
                if config.get(key) != value:
                    self.fail(f"function {fn}: LoggingConfig.{key} is {config.get(key)}, expected {value}")
        level = self.t.get("Parameters", {}).get("ApplicationLogLevel", {})
        allowed = level.get("AllowedValues") or []
        if not allowed or not set(allowed) <= {"TRACE", "DEBUG", "INFO"} or level.get("Default") not in allowed:
            self.fail(f"parameter ApplicationLogLevel: AllowedValues {allowed} (default "
                      f"{level.get('Default')}) must stay within TRACE, DEBUG, INFO: a higher level "
                      "drops the metric lines, which carry no level")

    def released_tables(self):
        if self.released is None:
            return
        for table, was in self.released["tables"].items():
            props = self.res.get(table, {}).get("Properties")
            if props is None:
                self.fail(f"table {table} of the released stack is gone or renamed: CloudFormation "
                          "would drop it from the stack")
                continue
            if props["KeySchema"] != was["KeySchema"]:
                self.fail(f"table {table}: KeySchema changed from the release: CloudFormation replaces the table")
            facts = table_facts(props)
            replacing = {
                "TableName": "a new TableName replaces the table (and a named table cannot be replaced "
                             "in place at all)",
                "LocalSecondaryIndexes": "local secondary indexes are set only when a table is created: "
                                         "a change replaces the table",
                "KeyAttributeTypes": "a key attribute's type cannot change in place: the table (or "
                                     "its index) is replaced",
                "TimeToLiveAttribute": "DynamoDB renames a TTL attribute only by disabling TTL and "
                                       "enabling it again an hour later: the update fails",
            }
            for key, why in replacing.items():
                if key not in was:
                    self.fail(f"table {table}: infra/released-tables.json does not record {key}: "
                              "run check_infra.py --write-released on the released template")
                elif facts[key] != was[key]:
                    self.fail(f"table {table}: {key} changed from the release ({was[key]} -> "
                              f"{facts[key]}): {why}")
            now = {g["IndexName"]: g for g in props.get("GlobalSecondaryIndexes", [])}
            for name, index in was["GlobalSecondaryIndexes"].items():
                if name in now and (now[name]["KeySchema"] != index["KeySchema"]
                                    or now[name]["Projection"] != index["Projection"]):
                    self.fail(f"table {table} index {name}: KeySchema or Projection changed under the "
                              "same IndexName: give the new index a new name")
            added = set(now) - set(was["GlobalSecondaryIndexes"])
            removed = set(was["GlobalSecondaryIndexes"]) - set(now)
            if len(added) + len(removed) > 1:
                self.fail(f"table {table}: indexes added {sorted(added)} and removed {sorted(removed)} "
                          "in one update; CloudFormation takes one per table per update")

    def run(self):
        functions = self.of_type("AWS::Lambda::Function")
        self.queues()
        rule_name = self.rule()
        self.alarms(functions, rule_name)
        self.sources(functions)
        self.api_timeouts(functions)
        self.resource_policies()
        self.names()
        self.roles(functions)
        self.secret_writes(functions)
        self.grants_table(functions)
        self.routes()
        self.tables()
        self.retention()
        self.throttles()
        self.alert_rule()
        if rule_name:
            self.event_rule(rule_name[0]["Ref"])
        self.partition()
        self.account_global()
        self.custom_domain()
        self.builds()
        self.layers()
        self.parameters()
        self.logging(functions)
        self.tracing(functions)
        self.outputs(functions)
        self.released_tables()
        return self.problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transformed", nargs="?", default=str(ROOT / "target/infra/template.json"))
    parser.add_argument("--raw", default=str(ROOT / "infra/template.yaml"))
    parser.add_argument("--released", default=str(ROOT / "infra/released-tables.json"))
    parser.add_argument("--write-released", action="store_true",
                        help="on a release: record the template's table key schemas in --released")
    args = parser.parse_args()
    with open(args.transformed, encoding="utf-8") as f:
        template = json.load(f)
    with open(args.released, encoding="utf-8") as f:
        released = json.load(f)
    if args.write_released:
        snapshot = released_snapshot(template, released["_about"])
        Path(args.released).write_text(json.dumps(snapshot, indent=2) + "\n", encoding="utf-8")
        print(f"check_infra: wrote {args.released} ({len(snapshot['tables'])} tables)")
        return 0
    problems = Checker(template, load_yaml(args.raw), released).run()
    for where, line in arn_literals(ROOT):
        problems.append(f"{where}: spells arn:aws: ({line}); take the partition from the ARN at hand "
                        "or the stack (other partitions: aws-cn, aws-us-gov)")
    for p in problems:
        print(f"check_infra: {p}", file=sys.stderr)
    if problems:
        print(f"check_infra: {len(problems)} problem(s) in {args.transformed}", file=sys.stderr)
        return 1
    alarms = sum(1 for r in template["Resources"].values() if r["Type"] == "AWS::CloudWatch::Alarm")
    print(f"check_infra: ok ({len(template['Resources'])} resources, {alarms} alarms, "
          f"stack names up to {max_stack_name(template)} characters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
