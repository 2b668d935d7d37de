"""Unit tests of scripts/provision.py's local stack, run by `make infra-selftest`.

No emulator: the resources are "created" by provision.py's dry run, which
answers as the emulator would. What they prove: every Output of
infra/template.yaml resolves against what provision.py creates or has its
value in LOCAL_OUTPUTS; the grants table is created keyed and encrypted as
the template says (CreateTable's SSESpecification from CloudFormation's); a copy of the template with one more Output that
resolves to nothing local is refused by provision.py (exit 1, naming the
Output) before it calls the emulator; and LOCAL_OUTPUTS may hold neither an
Output that resolves nor one the template lacks.

    .venv-tools/bin/python scripts/test_provision.py
"""

import copy
import json
import subprocess
import sys
import unittest
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import provision  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "target/infra/test-provision"
STACK = "hg-test"
ENDPOINT = "http://127.0.0.1:9"  # nothing listens: a call to the emulator would fail


def planned(template, stack=STACK):
    """A resolver after provision.py's dry run of `template`."""
    params = {name: p.get("Default") for name, p in template.get("Parameters", {}).items()}
    params.update({"AWS::StackName": stack, "AWS::Region": provision.REGION,
                   "AWS::AccountId": provision.ACCOUNT, "AWS::Partition": "aws",
                   "AWS::URLSuffix": "amazonaws.com"})
    resolver = provision.Resolver(template, params)
    provision.provision(template, resolver, stack, lambda service: provision.DryRun(ENDPOINT))
    return resolver


class LocalStackOutputs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.template = provision.transformed_template(provision.TEMPLATE, {})

    def outputs(self, template=None, local=None):
        template = template or self.template
        return provision.stack_outputs(template, planned(template), STACK, "http://127.0.0.1:8787", local)

    def unconditional(self):
        """The outputs with no Condition: the custom domain's exist only with
        CustomDomainName, which the local stack never sets."""
        return {k for k, o in self.template["Outputs"].items() if "Condition" not in o}

    def test_every_output_resolves_or_has_its_local_value(self):
        outputs = self.outputs()
        self.assertEqual(set(outputs), self.unconditional())
        self.assertNotIn("WebhookDomainTarget", outputs)
        self.assertEqual(outputs["InboxTableName"][0], f"{STACK}-InboxTable")
        self.assertEqual(outputs["ActionQueueUrl"][0], f"{ENDPOINT}/{provision.ACCOUNT}/{STACK}-ActionQueue")
        self.assertEqual(outputs["IngressLogGroupName"][0], f"/aws/lambda/{STACK}-ingress")
        self.assertEqual(outputs["Service"][0], STACK)
        self.assertEqual(outputs["AlarmNamePrefix"][0], f"{STACK}-")
        self.assertEqual(outputs["WebhookBaseUrl"][0], "http://127.0.0.1:8787")
        self.assertEqual(outputs["IngressFunctionName"][0], f"{STACK}-IngressFunction")

    def test_an_output_of_a_resource_not_created_locally_needs_a_local_value(self):
        template = copy.deepcopy(self.template)
        template["Outputs"]["WebhookApiId"] = {"Value": {"Ref": "WebhookApi"}}
        with self.assertRaisesRegex(provision.UnresolvedOutputs, r"WebhookApiId: no local value"):
            self.outputs(template)
        local = {**provision.LOCAL_OUTPUTS, "WebhookApiId": "{stack}-api"}
        self.assertEqual(self.outputs(template, local)["WebhookApiId"][0], f"{STACK}-api")

    def test_a_function_is_named_locally_but_not_created(self):
        template = copy.deepcopy(self.template)
        template["Outputs"]["IngressFunctionArn"] = {"Value": {"Fn::GetAtt": ["IngressFunction", "Arn"]}}
        with self.assertRaisesRegex(provision.UnresolvedOutputs, r"IngressFunctionArn: no local value"):
            self.outputs(template)

    def test_a_local_value_for_an_output_that_resolves_is_refused(self):
        local = {**provision.LOCAL_OUTPUTS, "InboxTableName": "elsewhere"}
        with self.assertRaisesRegex(provision.UnresolvedOutputs, r"InboxTableName: resolves locally"):
            self.outputs(local=local)

    def test_a_local_value_for_an_output_the_template_lacks_is_refused(self):
        local = {**provision.LOCAL_OUTPUTS, "RemovedOutput": "x"}
        with self.assertRaisesRegex(provision.UnresolvedOutputs, r"RemovedOutput: LOCAL_OUTPUTS lists it"):
            self.outputs(local=local)

    def test_the_registration_is_one_handle_with_literal_outputs_and_the_parameters(self):
        params = {name: p.get("Default") for name, p in self.template["Parameters"].items()}
        params["MaxReceiveCount"] = "3"
        body, values = provision.registration(self.template, params, self.outputs())
        self.assertEqual(body["Resources"], {"LocalStack": {"Type": "AWS::CloudFormation::WaitConditionHandle"}})
        self.assertEqual(set(body["Outputs"]), self.unconditional())
        self.assertTrue(all(isinstance(o["Value"], str) for o in body["Outputs"].values()))
        self.assertEqual(set(body["Parameters"]), set(self.template["Parameters"]))
        given = {v["ParameterKey"]: v["ParameterValue"] for v in values}
        self.assertEqual(given["MaxReceiveCount"], "3")
        self.assertEqual(given["InboxTtlSeconds"], str(self.template["Parameters"]["InboxTtlSeconds"]["Default"]))
        self.assertTrue(all(isinstance(v, str) for v in given.values()))
        self.assertNotIn("Metadata", body)

    def test_the_registration_holds_the_configuration_where_make_deploy_puts_it(self):
        params = {name: p.get("Default") for name, p in self.template["Parameters"].items()}
        text = "[workspaces.ws-42.retell]\nsecrets = [\"env:X\"]\n"
        body, _ = provision.registration(self.template, params, self.outputs(), text)
        self.assertEqual(body["Metadata"], {"Hookgate::Config": text})
        self.assertEqual(json.loads(json.dumps(body))["Metadata"]["Hookgate::Config"], text)


class Recording(provision.DryRun):
    """The dry run, keeping each call's arguments: (operation, kwargs)."""

    def __init__(self, endpoint, calls):
        super().__init__(endpoint)
        self.calls = calls

    def __getattr__(self, operation):
        answer = super().__getattr__(operation)

        def call(**kwargs):
            self.calls.append((operation, kwargs))
            return answer(**kwargs)
        return call


class LocalTables(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.template = provision.transformed_template(provision.TEMPLATE, {})

    def created_tables(self, **params):
        values = {name: p.get("Default") for name, p in self.template.get("Parameters", {}).items()}
        values.update(params)
        values.update({"AWS::StackName": STACK, "AWS::Region": provision.REGION,
                       "AWS::AccountId": provision.ACCOUNT, "AWS::Partition": "aws",
                       "AWS::URLSuffix": "amazonaws.com"})
        calls = []
        provision.provision(self.template, provision.Resolver(self.template, values), STACK,
                            lambda service: Recording(ENDPOINT, calls))
        return {kw["TableName"]: kw for op, kw in calls if op == "create_table"}

    def test_the_grants_table_is_keyed_by_destination_and_encrypted_with_kms(self):
        grants = self.created_tables()[f"{STACK}-GrantsTable"]
        self.assertEqual(grants["KeySchema"], [{"AttributeName": "destination", "KeyType": "HASH"}])
        self.assertEqual(grants["AttributeDefinitions"], [{"AttributeName": "destination", "AttributeType": "S"}])
        # CreateTable's `Enabled`, not CloudFormation's `SSEEnabled`; the AWS
        # managed key (no KMSMasterKeyId) without SecretsKmsKeyArn.
        self.assertEqual(grants["SSESpecification"], {"Enabled": True, "SSEType": "KMS"})
        self.assertTrue(grants["DeletionProtectionEnabled"])

    def test_the_grants_table_takes_the_stacks_key_when_one_is_set(self):
        key = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
        grants = self.created_tables(SecretsKmsKeyArn=key)[f"{STACK}-GrantsTable"]
        self.assertEqual(grants["SSESpecification"], {"Enabled": True, "SSEType": "KMS", "KMSMasterKeyId": key})

    def test_the_other_tables_keep_dynamodbs_default_encryption(self):
        tables = self.created_tables()
        for logical in ("InboxTable", "ActionsTable", "TriageTable"):
            self.assertNotIn("SSESpecification", tables[f"{STACK}-{logical}"], logical)


class Refusal(unittest.TestCase):
    def test_provision_refuses_a_template_with_an_output_it_cannot_give(self):
        text = provision.TEMPLATE.read_text(encoding="utf-8")
        self.assertEqual(text.count("\nOutputs:\n"), 1)
        broken = text.replace("\nOutputs:\n", "\nOutputs:\n  WebhookApiEndpoint:\n"
                                              "    Value: !GetAtt WebhookApi.ApiEndpoint\n")
        OUT.mkdir(parents=True, exist_ok=True)
        path = OUT / "extra-output.yaml"
        path.write_text(broken, encoding="utf-8")
        result = subprocess.run(
            [sys.executable, str(ROOT / "scripts/provision.py"), "--template", str(path),
             "--endpoint", ENDPOINT, "--stack-name", STACK],
            capture_output=True, text=True, cwd=ROOT, timeout=300)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("WebhookApiEndpoint: no local value", result.stderr)
        self.assertNotIn("Traceback", result.stderr)  # refused before any emulator call
        self.assertEqual(result.stdout, "")


if __name__ == "__main__":
    unittest.main(verbosity=2)
