"""Unit tests of scripts/deploy_params.py's resolution, run by `make deploy-check`.

What `make deploy` does with values from four places, without AWS: the
deployed stack's values are given here as they would come back from
DescribeStacks.
"""

import sys
import unittest
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from deploy_params import env_name, resolve  # noqa: E402

PARAMETERS = {
    "AlarmEmail": {"Type": "String", "Default": ""},
    "SecretsKmsKeyArn": {"Type": "String", "Default": ""},
    "InboxTtlSeconds": {"Type": "Number", "Default": 691200},
}


class Resolution(unittest.TestCase):
    def test_a_variable_wins_and_set_empty_means_empty(self):
        values, conflicts = resolve(PARAMETERS, {"ALARM_EMAIL": ""},
                                    {"AlarmEmail": "saved@example.com"}, {"AlarmEmail": "ops@example.com"})
        self.assertEqual(values["AlarmEmail"], "")
        self.assertEqual(conflicts, [])

    def test_a_second_deploy_keeps_what_the_stack_was_deployed_with(self):
        deployed = {"AlarmEmail": "ops@example.com", "SecretsKmsKeyArn": "arn:aws:kms:eu-west-1:1:key/k",
                    "InboxTtlSeconds": "900000"}
        values, conflicts = resolve(PARAMETERS, {}, None, deployed)
        self.assertEqual(values, deployed)
        self.assertEqual(conflicts, [])

    def test_without_aws_the_values_saved_after_the_last_deploy_stand(self):
        values, _ = resolve(PARAMETERS, {}, {"AlarmEmail": "ops@example.com"}, None)
        self.assertEqual(values["AlarmEmail"], "ops@example.com")
        self.assertEqual(values["InboxTtlSeconds"], "691200")

    def test_a_saved_value_another_deploy_changed_is_refused_until_a_variable_decides(self):
        saved, deployed = {"AlarmEmail": "old@example.com"}, {"AlarmEmail": "new@example.com"}
        values, conflicts = resolve(PARAMETERS, {}, saved, deployed)
        self.assertEqual(values["AlarmEmail"], "new@example.com")
        self.assertEqual(len(conflicts), 1)
        self.assertIn("set ALARM_EMAIL to choose", conflicts[0])
        _, conflicts = resolve(PARAMETERS, {"ALARM_EMAIL": "old@example.com"}, saved, deployed)
        self.assertEqual(conflicts, [])

    def test_a_parameter_new_to_the_template_takes_its_default(self):
        values, _ = resolve(PARAMETERS, {}, {"AlarmEmail": "a@b.co"}, {"AlarmEmail": "a@b.co"})
        self.assertEqual(values["InboxTtlSeconds"], "691200")

    def test_variable_names(self):
        self.assertEqual(env_name("InboxTtlSeconds"), "INBOX_TTL_SECONDS")
        self.assertEqual(env_name("SecretsKmsKeyArn"), "SECRETS_KMS_KEY_ARN")
        self.assertEqual(env_name("EventDetailType"), "EVENT_DETAIL_TYPE")


if __name__ == "__main__":
    unittest.main()
