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
MinValue/MaxValue, a SecretsKmsKeyArn of another Region than the stack's, and
an ActionReservedConcurrency below ActionMaxConcurrency (the poller's batches
would be throttled).

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

STACK_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]*$")


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
                     "derives from it fits AWS's limit (scripts/check_infra.py, max_stack_name)")
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
            if "MinValue" in spec and number < float(spec["MinValue"]):
                found.append(f"{name}={value}: below its minimum {spec['MinValue']}")
            if "MaxValue" in spec and number > float(spec["MaxValue"]):
                found.append(f"{name}={value}: above its maximum {spec['MaxValue']}")
    key = values.get("SecretsKmsKeyArn", "")
    if key and region and key.split(":")[3:4] != [region]:
        found.append(f"SecretsKmsKeyArn {key}: a key of another Region than the stack's ({region}); "
                     "SSM and Secrets Manager decrypt with a key of their own Region")
    reserved, scaling = values.get("ActionReservedConcurrency", "0"), values.get("ActionMaxConcurrency", "0")
    if reserved.isdigit() and scaling.isdigit() and 0 < int(reserved) < int(scaling):
        found.append(f"ActionReservedConcurrency={reserved} is below ActionMaxConcurrency={scaling}: "
                     "the queue's poller would run batches the reservation throttles")
    return found


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
    print(f"@stack={args.stack}")
    print(f"@account={account}")
    print(f"@region={region}")
    for name, value in values.items():
        print(f"{name}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
