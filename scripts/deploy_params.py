"""The stack's parameters for `make deploy`: resolved, saved and checked before anything is built.

    .venv/bin/python scripts/deploy_params.py --stack NAME [--state DIR] [--adopt]
        [--transformed target/infra/template.json]
    .venv/bin/python scripts/deploy_params.py --stack NAME [--state DIR] --save-deployed

`sam deploy --guided` offers each parameter's template default, so pressing
Enter through it on a second deploy reset AlarmEmail (deleting the
subscription) and SecretsKmsKeyArn (every delivery answered 503). Here each
parameter's value is, first found wins:

1. the environment variable named after it (InboxTtlSeconds becomes
   INBOX_TTL_SECONDS); set and empty means empty;
2. with --adopt, when the stack exists, its deployed value (CloudFormation
   DescribeStacks, with your credentials): a second `make deploy` deploys
   what the first did, whoever ran it;
3. the value saved for this stack after its last successful `make deploy`
   from this checkout (STATE/<stack>.env, ignored by git): what a check
   without AWS (`CHECK_ONLY=1`) and a stack deleted since start from;
4. the template's default.

A saved value that differs from the deployed one (someone deployed the
stack from elsewhere since) is refused unless its variable decides.
`--save-deployed`, which scripts/deploy.sh runs after `sam deploy`
succeeded, saves the stack's parameters as deployed (answers given to
`GUIDED=1` prompts included). Every value is passed to `sam deploy`
explicitly. Refused (exit 1, one line per problem), before anything is built:
a stack name CloudFormation or the template's physical names cannot take, a
value outside its parameter's AllowedValues, AllowedPattern or
MinValue/MaxValue, a fraction where AWS takes an integer (every Number
parameter but FRACTIONAL's), a SecretsKmsKeyArn of another Region than the
stack's, a custom domain without its certificate (or the reverse) or with a
certificate of another Region, and an ActionReservedConcurrency below
ActionMaxConcurrency (the poller's batches would be throttled).

Warns (exit 0) for each scope of the deployer's policies
(check_deployer.POLICIES; DEPLOYER_POLICIES, a comma list of files, names
others) that, deployed for this stack, also takes a resource the template
gives another stack (with --adopt the Region's stacks, from ListStacks;
DEPLOY_OTHER_STACKS, a comma list, names them instead, as `make
deploy-check` does).

Prints `@stack=`, `@account=`, `@region=` (empty when unknown), then one
`Name=value` line per parameter.
"""

import argparse
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_infra import max_stack_name  # noqa: E402
import check_deployer  # noqa: E402

STACK_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]*$")
# The Number parameters AWS takes with a fraction (API Gateway's
# ThrottlingRateLimit is a double); every other one becomes an Integer
# property (a burst, a concurrency, seconds, counts), which CloudFormation's
# Number type does not check and AWS refuses mid-deploy.
FRACTIONAL = {"WebhookThrottleRate", "OpsThrottleRate"}


def env_name(parameter):
    """InboxTtlSeconds -> INBOX_TTL_SECONDS; SecretsKmsKeyArn -> SECRETS_KMS_KEY_ARN."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", parameter).upper()


def read_saved(path):
    if not path.exists():
        return None
    saved = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            saved[name] = value
    return saved


def write_saved(path, stack, values):
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"# Stack {stack}'s parameters as its last `make deploy` from this checkout deployed them",
             "# (scripts/deploy_params.py). A record, not a setting: to change a value, set its",
             "# variable for one deploy (ALARM_EMAIL=..., the parameter's name in capitals)."]
    path.write_text("\n".join(lines + [f"{k}={v}" for k, v in values.items()]) + "\n", encoding="utf-8")


def deployed(stack):
    """The deployed stack's parameters, or None when it does not exist."""
    import boto3
    from botocore.exceptions import ClientError

    try:
        stacks = boto3.client("cloudformation").describe_stacks(StackName=stack)["Stacks"]
    except ClientError as e:
        if "does not exist" in str(e):
            return None
        raise
    return {p["ParameterKey"]: p.get("ParameterValue", "") for p in stacks[0].get("Parameters", [])}


def where(adopt):
    """(account, region) the stack deploys to, as far as known without asking when not adopting."""
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or ""
    account = os.environ.get("AWS_ACCOUNT_ID", "")
    if adopt:
        import boto3

        session = boto3.session.Session()
        region = region or session.region_name or ""
        account = account or session.client("sts").get_caller_identity()["Account"]
    return account, region


def resolve(parameters, environ, saved, current):
    """(values, conflicts): each parameter's value, first found wins: its
    variable, the deployed stack's (`current`), the saved one, the default;
    and the parameters whose saved and deployed values differ with no
    variable to decide."""
    values, conflicts = {}, []
    for name, spec in parameters.items():
        if env_name(name) in environ:
            values[name] = environ[env_name(name)]
        elif current and name in current:
            values[name] = current[name]
            if saved and name in saved and saved[name] != current[name]:
                conflicts.append(f"{name}: saved {saved[name]!r}, deployed {current[name]!r} (deployed "
                                 "from elsewhere since, or a file of an earlier make deploy): set "
                                 f"{env_name(name)} to choose, or delete the saved file")
        elif saved and name in saved:
            values[name] = saved[name]
        else:
            values[name] = str(spec.get("Default", ""))
    return values, conflicts


def problems(stack, parameters, values, transformed, region):
    found = []
    longest = max_stack_name(transformed)
    if not STACK_NAME.match(stack) or len(stack) > longest:
        found.append(f"stack name {stack!r}: it must start with a letter, hold only letters, digits and "
                     f"'-', and be at most {longest} characters, so that every physical name the template "
                     "derives from it fits AWS's limit, and no name CloudFormation generates is shortened "
                     "(scripts/check_infra.py, max_stack_name)")
    for name, spec in parameters.items():
        value = values[name]
        if "\n" in value:
            found.append(f"{name}: a value with a newline")
            continue
        if "AllowedValues" in spec and value not in [str(v) for v in spec["AllowedValues"]]:
            found.append(f"{name}={value!r}: not one of {spec['AllowedValues']}")
        if "AllowedPattern" in spec and not re.fullmatch(spec["AllowedPattern"], value):
            found.append(f"{name}={value!r}: {spec.get('ConstraintDescription', 'does not match ' + spec['AllowedPattern'])}")
        if spec.get("Type") == "Number":
            try:
                number = float(value)
            except ValueError:
                found.append(f"{name}={value!r}: not a number")
                continue
            if name not in FRACTIONAL and not re.fullmatch(r"-?[0-9]+", value.strip()):
                found.append(f"{name}={value}: not a whole number (AWS takes an integer here)")
            if "MinValue" in spec and number < float(spec["MinValue"]):
                found.append(f"{name}={value}: below its minimum {spec['MinValue']}")
            if "MaxValue" in spec and number > float(spec["MaxValue"]):
                found.append(f"{name}={value}: above its maximum {spec['MaxValue']}")
    domain, certificate = values.get("CustomDomainName", ""), values.get("CustomDomainCertificateArn", "")
    if bool(domain) != bool(certificate):
        found.append(f"CustomDomainName={domain!r}, CustomDomainCertificateArn={certificate!r}: set both "
                     "or neither (the domain needs its certificate)")
    if certificate and region and certificate.split(":")[3:4] != [region]:
        found.append(f"CustomDomainCertificateArn {certificate}: a certificate of another Region than the "
                     f"stack's ({region}); a regional domain takes one of its own Region")
    key = values.get("SecretsKmsKeyArn", "")
    if key and region and key.split(":")[3:4] != [region]:
        found.append(f"SecretsKmsKeyArn {key}: a key of another Region than the stack's ({region}); "
                     "SSM and Secrets Manager decrypt with a key of their own Region")
    reserved, scaling = values.get("ActionReservedConcurrency", "0"), values.get("ActionMaxConcurrency", "0")
    try:
        below = 0 < float(reserved) < float(scaling)
    except ValueError:
        below = False  # refused above as not a number
    if below:
        found.append(f"ActionReservedConcurrency={reserved} is below ActionMaxConcurrency={scaling}: "
                     "the queue's poller would run batches the reservation throttles")
    return found


def shared_scopes(stack, others, policies, transformed):
    """(Sid, scope, other stack) for each scope of the deployer's policies, as
    deployed for `stack`, that also takes a resource the template gives
    another stack of the Region (scripts/check_deployer.py, with CloudFormation's
    names `<stack>-<logical id>-<12>`): none while each scope names its
    resource's own form; `${StackName}-*` of `hookgate` would take
    `hookgate-staging`'s tables, roles and functions."""
    pairs = [(stack, other) for other in others if other != stack]
    return [(sid, scope, other) for _, other, sid, scope, _ in
            check_deployer.shared(transformed, check_deployer.union(policies), pairs)]


def deployer_policies():
    """[(name, policy)]: the deployer's policies (DEPLOYER_POLICIES, a comma
    list of files, names others, as `make deploy-check` does for a broken copy)."""
    names = os.environ.get("DEPLOYER_POLICIES")
    paths = [Path(n) for n in names.split(",") if n] if names else check_deployer.POLICIES
    return [(str(p), json.loads(p.read_text(encoding="utf-8"))) for p in paths]


def region_stacks():
    """The names of the Region's stacks (ListStacks, every status but
    DELETE_COMPLETE: the deployer's policies grant no DescribeStacks on other
    stacks, and only names matter to a scope), or None when they cannot be
    listed."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        pages = boto3.client("cloudformation").get_paginator("list_stacks").paginate()
        return sorted({s["StackName"] for page in pages for s in page["StackSummaries"]
                       if s["StackStatus"] != "DELETE_COMPLETE"})
    except (BotoCoreError, ClientError) as e:
        print(f"deploy_params: could not list the account's stacks ({e}): shared scopes not checked",
              file=sys.stderr)
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", required=True)
    parser.add_argument("--state", default=str(ROOT / ".deploy"), help="where each stack's values are saved")
    parser.add_argument("--adopt", action="store_true",
                        help="ask AWS: the deployed stack's values when none are saved, the account and Region")
    parser.add_argument("--transformed", default=str(ROOT / "target/infra/template.json"))
    parser.add_argument("--save-deployed", action="store_true",
                        help="after a deploy: save the stack's parameters as deployed")
    args = parser.parse_args()

    path = Path(args.state) / f"{args.stack}.env"
    if args.save_deployed:
        current = deployed(args.stack)
        if current is None:
            print(f"deploy_params: stack {args.stack} does not exist: nothing saved", file=sys.stderr)
            return 1
        write_saved(path, args.stack, current)
        print(f"deploy_params: saved stack {args.stack}'s deployed parameters in {path}")
        return 0
    transformed = json.loads(Path(args.transformed).read_text(encoding="utf-8"))
    parameters = transformed.get("Parameters", {})
    saved = read_saved(path)
    current = deployed(args.stack) if args.adopt else None
    values, conflicts = resolve(parameters, os.environ, saved, current)
    account, region = where(args.adopt)
    found = conflicts + problems(args.stack, parameters, values, transformed, region)
    for problem in found:
        print(f"deploy_params: {problem}", file=sys.stderr)
    if found:
        return 1
    # Stacks whose deployer scopes overlap: a warning, not a refusal (none
    # while each scope names its resource's own form; a policy widened by hand
    # shows here).
    others = os.environ.get("DEPLOY_OTHER_STACKS")
    others = others.split(",") if others is not None else (region_stacks() if args.adopt else [])
    policies = deployer_policies()
    for sid, scope, other in shared_scopes(args.stack, [o for o in others or [] if o], policies,
                                           transformed):
        print(f"deploy_params: warning: the deployer policy's scope {sid} {scope} of stack "
              f"{args.stack} also takes stack {other}'s resources (docs/deploy.md, \"Stacks that "
              "cannot reach each other\")", file=sys.stderr)
    print(f"@stack={args.stack}")
    print(f"@account={account}")
    print(f"@region={region}")
    for name, value in values.items():
        print(f"{name}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
