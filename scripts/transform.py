"""Runs the real SAM transform on infra/template.yaml and writes CloudFormation JSON.

This is what CloudFormation does with `Transform: AWS::Serverless-2016-10-31`
at deploy time, run offline with the pinned aws-sam-translator (infra/
constraints.txt, installed in .venv-tools by `make tools`):

    .venv-tools/bin/python scripts/transform.py [TEMPLATE] [--out PATH]

Parameters take their defaults unless overridden (`--param Name=value`), as
CloudFormation passes the stack's values to the transform: the translator
inlines a few of them (EventInvokeConfig's MaximumEventAgeInSeconds and
MaximumRetryAttempts), the output keeps `Ref`s to the others. No AWS call is
made: the region is fixed (us-east-1), local CodeUri/ContentUri paths are
replaced by a placeholder S3 URI (as `sam validate` does), and the managed-policy
map is empty, so a template that names a managed policy fails here instead of
needing IAM. Resource `Metadata` is passed through to the generated resources,
so checkov suppressions survive. Any transform error exits 1 with the
translator's message.
"""

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TEMPLATE = ROOT / "infra/template.yaml"
DEFAULT_OUT = ROOT / "target/infra/template.json"
REGION = "us-east-1"
PLACEHOLDER_S3 = "s3://hookgate-transform-placeholder/code.zip"


class _Loader(yaml.SafeLoader):
    """YAML with CloudFormation's short-form intrinsics (`!Ref`, `!Sub`, …)."""


def _intrinsic(loader, tag_suffix, node):
    name = "Ref" if tag_suffix == "Ref" else f"Fn::{tag_suffix}"
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if tag_suffix == "GetAtt":
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    return {name: value}


_Loader.add_multi_constructor("!", _intrinsic)


def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=_Loader)  # noqa: S506 - SafeLoader subclass


def _placeholder_uris(template):
    """Local code paths → a placeholder S3 URI (the translator accepts no local path)."""
    for resource in (template.get("Resources") or {}).values():
        if not isinstance(resource, dict):
            continue
        props = resource.get("Properties") or {}
        key = {
            "AWS::Serverless::Function": "CodeUri",
            "AWS::Serverless::LayerVersion": "ContentUri",
            "AWS::Serverless::Api": "DefinitionUri",
            "AWS::Serverless::HttpApi": "DefinitionUri",
        }.get(resource.get("Type"))
        if key and isinstance(props.get(key), str) and not props[key].startswith("s3://"):
            props[key] = PLACEHOLDER_S3
    function_globals = (template.get("Globals") or {}).get("Function") or {}
    if isinstance(function_globals.get("CodeUri"), str):
        function_globals["CodeUri"] = PLACEHOLDER_S3


class TransformError(Exception):
    pass


def transform(template_path=DEFAULT_TEMPLATE, parameters=None):
    """Returns the CloudFormation the SAM transform makes of `template_path`."""
    import boto3
    from samtranslator.model.exceptions import InvalidDocumentException
    from samtranslator.parser import parser
    from samtranslator.translator.translator import Translator

    sam_template = load_yaml(template_path)
    if not isinstance(sam_template, dict):
        raise TransformError(f"{template_path}: not a template")
    _placeholder_uris(sam_template)
    session = boto3.Session(region_name=REGION, aws_access_key_id="offline",
                            aws_secret_access_key="offline")
    translator = Translator(managed_policy_map={}, sam_parser=parser.Parser(),
                            plugins=[], boto_session=session)
    try:
        return translator.translate(
            sam_template=sam_template,
            parameter_values=dict(parameters or {}),
            passthrough_metadata=True,
            get_managed_policy_map=lambda: {},
        )
    except InvalidDocumentException as e:
        causes = "; ".join(getattr(c, "message", str(c)) for c in e.causes)
        raise TransformError(causes or getattr(e, "message", str(e))) from e


def write_json(document, out):
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # Atomic: parallel test processes may write the same cache file.
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=1, sort_keys=False)
        f.write("\n")
    os.replace(tmp, out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("template", nargs="?", default=str(DEFAULT_TEMPLATE))
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    parser.add_argument("--param", action="append", default=[], help="Name=value")
    args = parser.parse_args()
    parameters = dict(p.split("=", 1) for p in args.param)
    try:
        document = transform(args.template, parameters)
    except TransformError as e:
        print(f"SAM transform of {args.template} failed: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # the translator raises more than InvalidDocumentException
        print(f"SAM transform of {args.template} failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    write_json(document, args.out)
    print(f"transform: {args.template} -> {args.out} "
          f"({len(document.get('Resources', {}))} resources)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
