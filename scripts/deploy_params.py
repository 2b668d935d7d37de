"""The stack's parameters for `make deploy`: resolved, saved and checked before anything is built.

    .venv/bin/python scripts/deploy_params.py --stack NAME [--state DIR] [--adopt]
        [--transformed target/infra/template.json]

`sam deploy --guided` offers each parameter's template default, so pressing
Enter through it on a second deploy reset AlarmEmail (deleting the
subscription) and SecretsKmsKeyArn (every delivery answered 503). Here each
parameter's value is, first found wins:

1. the environment variable named after it (InboxTtlSeconds becomes
   INBOX_TTL_SECONDS); set and empty means empty;
2. the value saved for this stack by the last run (STATE/<stack>.env, ignored
   by git): a second `make deploy` deploys what the first did;
3. with --adopt, when nothing is saved and the stack exists, its deployed value
   (CloudFormation DescribeStacks, with your credentials);
4. the template's default.

scripts/deploy.sh saves the resolved set once every check passed, and
passes every value to `sam deploy` explicitly. Refused (exit 1, one line per problem), before anything is built:
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
    values = {}
    for name, spec in parameters.items():
        if env_name(name) in environ:
            values[name] = environ[env_name(name)]
        elif saved and name in saved:
            values[name] = saved[name]
        elif current and name in current:
            values[name] = current[name]
        else:
            values[name] = str(spec.get("Default", ""))
    return values


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
    args = parser.parse_args()

    transformed = json.loads(Path(args.transformed).read_text(encoding="utf-8"))
    parameters = transformed.get("Parameters", {})
    path = Path(args.state) / f"{args.stack}.env"
    saved = read_saved(path)
    current = deployed(args.stack) if args.adopt and saved is None else None
    values = resolve(parameters, os.environ, saved, current)
    account, region = where(args.adopt)
    found = problems(args.stack, parameters, values, transformed, region)
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
