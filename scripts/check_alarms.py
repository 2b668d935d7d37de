"""Alarms proven by the tests: every alarm of the transformed template watches a
metric series that something emits.

Inputs: the transformed CloudFormation (JSON, `target/infra/template.json`) and
EMF captures (JSONL: one CloudWatch Embedded Metric Format document per line,
as the functions print them; the Rust test harness writes them to the file
named by HOOKGATE_EMF_LOG).

* Each EMF line becomes the series CloudWatch would create from it: one per
  (namespace, metric name, dimension-name set) of its `_aws.CloudWatchMetrics`
  directives. A line CloudWatch would refuse (a dimension whose value is
  missing, not a string or empty, a metric without a numeric value, more than
  30 dimensions) creates nothing and fails the check. AWS::Logs::MetricFilter
  resources are emitters too (their MetricTransformations).
* An alarm (AWS::CloudWatch::Alarm: MetricName/Namespace/Dimensions, or the
  MetricStat queries of a `Metrics` math alarm) in a custom namespace (not
  `AWS/...`) fails when no emitter produces its (metric, dimension-name set):
  such an alarm stays OK forever.
* In an AWS namespace the metric must be one AWS publishes there, with a
  dimension set AWS uses, and each resource dimension's value must name a
  resource of the template (Ref/GetAtt of a queue, function, rule...), e.g.
  QueueName must be the queue's name (GetAtt Q.QueueName), not its URL (Ref).
* An alarm without AlarmActions fails (it can change state but tell no one).
* An alarm on one EMF metric (MetricName, a static Threshold, a greater-than
  comparison, Statistic Maximum or Sum) must be seen able to fire: the
  captured values, grouped by their dimension values (each one series)
  and into the alarm's periods by their EMF Timestamp, and reduced by its
  statistic as CloudWatch would, must cross its threshold in some period
  of some series. An alarm no test drives over its threshold
  fails: nothing shows it can ever go to ALARM.
* Emitted series that no alarm watches are listed (information only).
* The metric schema (docs/operations.md, "Metric schema") is the one list of
  series: an EMF or metric-filter series it does not list fails, and so does
  an EMF series in namespace `hookgate` without the `service` dimension (two
  stacks in one account would share it).

* Each dashboard (AWS::CloudWatch::Dashboard) is read the same way: every
  metric a widget shows (CloudWatch's `"."` and `"..."` shorthand expanded)
  must be emitted (custom namespaces) or published by AWS with that
  dimension set and naming a resource of the template.

`--self-test` removes the Dimensions of one custom-namespace alarm in a copy
of the template (written to target/checks/alarm-self-test-template.json) and
exits 0 only if the check then fails on that alarm, if an empty schema
then fails on an emitted series, if a dashboard showing a metric nothing
emits fails, and if raising the failure-streak alarm's threshold above
every captured value fails it as unable to fire.

Exit: 0 passed, 1 a finding, 2 bad input.
"""

import argparse
import copy
import hashlib
import json
import re
import sys
from pathlib import Path

ACCOUNT, REGION, PARTITION, STACK = "123456789012", "us-east-1", "aws", "hookgate"

# Metric names AWS publishes, per namespace, and the dimension-name sets it uses.
AWS_METRICS = {
    "AWS/SQS": {
        "metrics": {
            "ApproximateAgeOfOldestMessage", "ApproximateNumberOfMessagesDelayed",
            "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesVisible",
            "NumberOfEmptyReceives", "NumberOfDeduplicatedSentMessages", "NumberOfMessagesDeleted",
            "NumberOfMessagesReceived", "NumberOfMessagesSent", "SentMessageSize",
        },
        "dimensions": [{"QueueName"}],
    },
    "AWS/Lambda": {
        "metrics": {
            "Invocations", "Errors", "DeadLetterErrors", "DestinationDeliveryFailures", "Throttles",
            "OversizedRecordCount", "ProvisionedConcurrencyInvocations",
            "ProvisionedConcurrencySpilloverInvocations", "RecursiveInvocationsDropped", "Duration",
            "PostRuntimeExtensionsDuration", "IteratorAge", "OffsetLag", "ConcurrentExecutions",
            "ProvisionedConcurrentExecutions", "ProvisionedConcurrencyUtilization",
            "UnreservedConcurrentExecutions", "ClaimedAccountConcurrency", "AsyncEventsReceived",
            "AsyncEventAge", "AsyncEventsDropped",
        },
        "dimensions": [set(), {"FunctionName"}, {"FunctionName", "Resource"},
                       {"FunctionName", "ExecutedVersion"}],
    },
    "AWS/Events": {
        "metrics": {
            "DeadLetterInvocations", "Events", "FailedInvocations", "IngestionToInvocationCompleteLatency",
            "IngestionToInvocationStartLatency", "InvocationAttempts", "Invocations",
            "InvocationsCreated", "InvocationsFailedToBeSentToDlq", "InvocationsSentToDlq",
            "MatchedEvents", "PutEventsApproximateCallCount", "PutEventsEntriesCount",
            "PutEventsFailedEntriesCount", "PutEventsLatency", "PutEventsRequestSize",
            "RetryInvocationAttempts", "SuccessfulInvocationAttempts", "ThrottledRules",
            "TriggeredRules",
        },
        "dimensions": [set(), {"RuleName"}, {"EventBusName"}, {"EventBusName", "RuleName"},
                       {"EventSourceName"}],
    },
    "AWS/Logs": {
        "metrics": {"IncomingBytes", "IncomingLogEvents", "ForwardedBytes", "ForwardedLogEvents",
                    "DeliveryErrors", "DeliveryThrottling", "CallCount", "ErrorCount", "ThrottleCount"},
        "dimensions": [set(), {"LogGroupName"}, {"LogGroupName", "DestinationType", "FilterName"}],
    },
    "AWS/ApiGateway": {
        "metrics": {"4xx", "5xx", "4XXError", "5XXError", "Count", "IntegrationLatency", "Latency",
                    "DataProcessed"},
        "dimensions": [{"ApiId"}, {"ApiId", "Stage"}, {"ApiId", "Stage", "Route"},
                       {"ApiId", "Stage", "Resource", "Method"}, {"ApiName"}, {"ApiName", "Stage"}],
    },
    "AWS/DynamoDB": {
        "metrics": {"ConditionalCheckFailedRequests", "ConsumedReadCapacityUnits",
                    "ConsumedWriteCapacityUnits", "OnlineIndexThrottleEvents", "ReadThrottleEvents",
                    "ReturnedItemCount", "SuccessfulRequestLatency", "SystemErrors", "ThrottledRequests",
                    "TimeToLiveDeletedItemCount", "UserErrors", "WriteThrottleEvents",
                    "ThrottledPutRecordCount", "AccountProvisionedReadCapacityUtilization"},
        "dimensions": [set(), {"TableName"}, {"TableName", "Operation"},
                       {"TableName", "GlobalSecondaryIndexName"}, {"Operation"}],
    },
    "AWS/SNS": {
        "metrics": {"NumberOfMessagesPublished", "NumberOfNotificationsDelivered",
                    "NumberOfNotificationsFailed", "NumberOfNotificationsFilteredOut", "PublishSize"},
        "dimensions": [{"TopicName"}],
    },
    "AWS/Scheduler": {
        "metrics": {"InvocationAttemptCount", "TargetErrorCount", "TargetErrorThrottledCount",
                    "InvocationThrottleCount", "InvocationDroppedCount",
                    "InvocationsSentToDeadLetterCount", "InvocationsFailedToBeSentToDeadLetterCount"},
        "dimensions": [set(), {"ScheduleGroup"}],
    },
}

# Dimensions whose value names a resource: the types it may name.
RESOURCE_DIMENSIONS = {
    "QueueName": ("AWS::SQS::Queue", "QueueName"),
    "FunctionName": ("AWS::Lambda::Function", "Ref"),
    "RuleName": ("AWS::Events::Rule", "Ref"),
    "TableName": ("AWS::DynamoDB::Table", "Ref"),
    "TopicName": ("AWS::SNS::Topic", "TopicName"),
    "LogGroupName": ("AWS::Logs::LogGroup", "Ref"),
    "ApiId": ("AWS::ApiGatewayV2::Api", "Ref"),
}
# Resource dimensions that may also name something outside the stack.
ACCEPTED_LITERALS = {"EventBusName": {"default"}, "ScheduleGroup": {"default"}}

MAX_DIMENSIONS = 30


class Invalid(Exception):
    pass


def physical(logical, resource, resolve=lambda v: v):
    """A CloudFormation-style generated name (hookgate-Logical-SUFFIX), or the explicit one."""
    explicit = {"AWS::DynamoDB::Table": "TableName", "AWS::SQS::Queue": "QueueName",
                "AWS::Lambda::Function": "FunctionName", "AWS::Events::Rule": "Name",
                "AWS::SNS::Topic": "TopicName", "AWS::Logs::LogGroup": "LogGroupName"}.get(resource["Type"])
    name = (resource.get("Properties") or {}).get(explicit) if explicit else None
    if name is not None:
        name = resolve(name)
    if isinstance(name, str):
        return name
    digest = hashlib.sha256(logical.encode()).hexdigest().upper()[:12]
    return f"{STACK}-{logical}-{digest}"


class Template:
    def __init__(self, doc):
        self.doc = doc
        self.resources = doc.get("Resources", {})
        self.params = {k: v.get("Default") for k, v in doc.get("Parameters", {}).items()}
        self.pseudo = {"AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::Partition": PARTITION,
                       "AWS::StackName": STACK, "AWS::URLSuffix": "amazonaws.com"}
        self._conditions = {}

    def name(self, logical):
        return physical(logical, self.resources[logical], self.resolve)

    def ref(self, logical):
        if logical in self.params:
            return self.params[logical]
        if logical in self.pseudo:
            return self.pseudo[logical]
        if logical not in self.resources:
            raise Invalid(f"Ref to unknown {logical}")
        r = self.resources[logical]
        if r["Type"] == "AWS::SQS::Queue":
            return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{self.name(logical)}"
        if r["Type"] == "AWS::SNS::Topic":
            return f"arn:{PARTITION}:sns:{REGION}:{ACCOUNT}:{self.name(logical)}"
        return self.name(logical)

    def get_att(self, logical, attribute):
        if logical not in self.resources:
            raise Invalid(f"Fn::GetAtt of unknown {logical}")
        t = self.resources[logical]["Type"]
        name = self.name(logical)
        if attribute in ("QueueName", "TopicName", "Name"):
            return name
        if attribute == "Arn":
            service = t.split("::")[1].lower()
            return f"arn:{PARTITION}:{service}:{REGION}:{ACCOUNT}:{name}"
        return f"{name}.{attribute}"

    def condition(self, name):
        if name not in self._conditions:
            self._conditions[name] = bool(self.resolve(self.doc.get("Conditions", {})[name]))
        return self._conditions[name]

    def resolve(self, value):
        if isinstance(value, list):
            return [v for v in (self.resolve(x) for x in value) if v is not NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            (k, arg), = value.items()
            if k == "Ref":
                return NO_VALUE if arg == "AWS::NoValue" else self.ref(arg)
            if k == "Fn::GetAtt":
                logical, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
                return self.get_att(logical, attribute)
            if k == "Fn::Sub":
                text, variables = (arg if isinstance(arg, list) else [arg, {}])
                variables = {n: self.resolve(v) for n, v in variables.items()}
                return self.sub(text, variables)
            if k == "Fn::Join":
                return arg[0].join(str(x) for x in self.resolve(arg[1]))
            if k == "Fn::Select":
                return self.resolve(arg[1])[int(self.resolve(arg[0]))]
            if k == "Fn::Split":
                return self.resolve(arg[1]).split(arg[0])
            if k == "Fn::If":
                return self.resolve(arg[1] if self.condition(arg[0]) else arg[2])
            if k == "Fn::Equals":
                a, b = self.resolve(arg)
                return str(a) == str(b)
            if k == "Fn::Not":
                return not self.resolve(arg)[0]
            if k == "Fn::And":
                return all(self.resolve(arg))
            if k == "Fn::Or":
                return any(self.resolve(arg))
            if k == "Condition":
                return self.condition(arg)
        out = {}
        for k, v in value.items():
            r = self.resolve(v)
            if r is not NO_VALUE:
                out[k] = r
        return out

    def sub(self, text, variables):
        import re

        def one(match):
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                return str(variables[name])
            if "." in name and not name.startswith("AWS::"):
                logical, attribute = name.split(".", 1)
                return str(self.get_att(logical, attribute))
            return str(self.ref(name))

        return re.sub(r"\$\{([^}]*)\}", one, text)

    def deployed(self, logical):
        cond = self.resources[logical].get("Condition")
        return cond is None or self.condition(cond)

    def of_type(self, type_):
        return [k for k, r in self.resources.items() if r["Type"] == type_ and self.deployed(k)]


NO_VALUE = object()


def series_key(namespace, metric, dimensions):
    return (namespace, metric, frozenset(dimensions))


def read_schema(path):
    """The series docs/operations.md's "Metric schema" table lists."""
    rows, inside = set(), False
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.startswith("### Metric schema"):
            inside = True
        elif inside and line.startswith("#"):
            break
        elif inside and line.startswith("| `"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            namespace = cells[0].strip("`").replace("{stack}", STACK)
            sets = [[d.strip() for d in s.split(",") if d.strip()]
                    for s in re.findall(r"\[([^\]]*)\]", cells[2])] or [[]]
            for metric in re.findall(r"`([^`]+)`", cells[1]):
                for dims in sets:
                    rows.add(series_key(namespace, metric, dims))
    if not rows:
        raise Invalid(f"no metric schema table in {path}")
    return rows


def schema_findings(series, schema):
    """Series the schema does not list, and hookgate series without `service`."""
    failures = []
    for key, entry in sorted(series.items(), key=lambda kv: show(kv[0])):
        if key not in schema:
            failures.append(f"{show(key)} ({entry['source']}) is not in the metric schema "
                            "(docs/operations.md, \"Metric schema\"): add its row")
        if key[0] == "hookgate" and "service" not in key[2]:
            failures.append(f"{show(key)}: a hookgate series without the service dimension "
                            "(two stacks in one account would share it)")
    return failures


def show(key):
    namespace, metric, dims = key
    return f"{namespace} {metric} [{', '.join(sorted(dims)) or 'no dimensions'}]"


def read_emf(paths):
    """{series: {"count": n, "values": {dim: {values}}}}, [rejected lines]."""
    series, rejected, lines = {}, [], 0
    for path in paths:
        if not Path(path).exists():
            raise SystemExit(f"check_alarms: no EMF capture at {path} (run the tests with HOOKGATE_EMF_LOG={path})")
        with open(path, encoding="utf-8") as f:
            for n, text in enumerate(f, 1):
                if not text.strip():
                    continue
                where = f"{path}:{n}"
                try:
                    doc = json.loads(text)
                except ValueError as e:
                    rejected.append((where, f"not JSON ({e})", text.strip()[:200]))
                    continue
                meta = doc.get("_aws") if isinstance(doc, dict) else None
                if not isinstance(meta, dict):
                    continue  # an ordinary log line
                lines += 1
                problems, found = [], []
                for directive in meta.get("CloudWatchMetrics") or []:
                    namespace = directive.get("Namespace")
                    if not isinstance(namespace, str) or not namespace:
                        problems.append("a directive without a Namespace")
                        continue
                    metrics = []
                    largest = {}
                    for m in directive.get("Metrics") or []:
                        name = m.get("Name") if isinstance(m, dict) else None
                        value = doc.get(name)
                        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
                        if isinstance(value, list):
                            numeric = bool(value) and all(isinstance(v, (int, float)) for v in value)
                        if not name or not numeric:
                            problems.append(f"metric {name!r} has no numeric value")
                            continue
                        metrics.append(name)
                        largest[name] = value if isinstance(value, list) else [value]
                    for dims in directive.get("Dimensions") or []:
                        if len(dims) > MAX_DIMENSIONS:
                            problems.append(f"{len(dims)} dimensions (at most {MAX_DIMENSIONS})")
                            continue
                        bad = [d for d in dims if not isinstance(doc.get(d), str) or not doc.get(d)]
                        if bad:
                            problems.append(
                                "dimension " + ", ".join(f"{d}={doc.get(d)!r}" for d in bad)
                                + " missing or empty")
                            continue
                        for metric in metrics:
                            found.append((series_key(namespace, metric, dims), {d: doc[d] for d in dims},
                                          largest[metric]))
                if problems:
                    # CloudWatch drops a line it cannot extract: nothing from it is published.
                    rejected.append((where, "; ".join(sorted(set(problems))), text.strip()[:200]))
                    continue
                stamp = meta.get("Timestamp") if isinstance(meta.get("Timestamp"), int) else 0
                for key, values, points in found:
                    entry = series.setdefault(key, {"count": 0, "values": {}, "source": "EMF",
                                                    "points": []})
                    entry["count"] += 1
                    dims_values = tuple(sorted(values.items()))
                    entry["points"].extend((stamp, dims_values, v) for v in points)
                    for d, v in values.items():
                        entry["values"].setdefault(d, set()).add(v)
    return series, rejected, lines


def metric_filter_series(template):
    out = {}
    for logical in template.of_type("AWS::Logs::MetricFilter"):
        props = template.resolve(template.resources[logical].get("Properties", {}))
        for t in props.get("MetricTransformations", []):
            dims = [d["Key"] for d in t.get("Dimensions", [])]
            key = series_key(t["MetricNamespace"], t["MetricName"], dims)
            out[key] = {"count": 0, "values": {}, "source": f"metric filter {logical}"}
    return out


def watched(template, logical):
    """[(label, namespace, metric, [(dim name, raw value, resolved value)])] an alarm watches."""
    props = template.resources[logical].get("Properties", {})
    out = []
    if "MetricName" in props:
        dims = props.get("Dimensions") or []
        out.append((logical, template.resolve(props.get("Namespace")), template.resolve(props["MetricName"]),
                    [(template.resolve(d["Name"]), d["Value"], template.resolve(d["Value"])) for d in dims]))
    for query in props.get("Metrics") or []:
        stat = query.get("MetricStat")
        if not stat:
            continue
        metric = stat["Metric"]
        dims = metric.get("Dimensions") or []
        out.append((f"{logical}.Metrics[{query.get('Id')}]", template.resolve(metric.get("Namespace")),
                    template.resolve(metric["MetricName"]),
                    [(template.resolve(d["Name"]), d["Value"], template.resolve(d["Value"])) for d in dims]))
    if not out:
        out.append((logical, None, None, []))
    return out


def expand_metrics(rows):
    """A dashboard widget's `metrics` rows as CloudWatch reads them: `"."`
    repeats the previous row's item at that position; a leading `"..."`
    repeats the previous row's items up to where this row's own items take
    over, aligned from the end. A trailing dict (options) is dropped, and a
    row of only an expression (a dict) is no metric: None."""
    out, previous = [], []
    for row in rows:
        items = [x for x in row if not isinstance(x, dict)]
        if not items:
            out.append(None)
            continue
        if items[0] == "...":
            own = items[1:]
            if len(own) > len(previous):
                raise Invalid(f"a \"...\" row {row} is longer than the row before it {previous}")
            items = previous[:len(previous) - len(own)] + own
        items = [previous[i] if x == "." and i < len(previous) else x for i, x in enumerate(items)]
        previous = items
        out.append(items)
    return out


def dashboard_metrics(template):
    """[(label, namespace, metric, [(dim name, raw value, resolved value)])]
    the dashboards show."""
    out = []
    for logical in template.of_type("AWS::CloudWatch::Dashboard"):
        body = template.resolve(template.resources[logical].get("Properties", {}).get("DashboardBody"))
        try:
            widgets = json.loads(body)["widgets"]
        except (TypeError, ValueError, KeyError) as e:
            raise Invalid(f"{logical}: DashboardBody is not a dashboard's JSON: {e}")
        for w, widget in enumerate(widgets):
            title = widget.get("properties", {}).get("title", f"widget {w}")
            for items in expand_metrics(widget.get("properties", {}).get("metrics", [])):
                if items is None:
                    continue
                if len(items) < 2 or len(items) % 2:
                    raise Invalid(f"{logical} {title!r}: metric row {items} is not namespace, name "
                                  "and name/value pairs")
                dims = [(items[i], items[i + 1], items[i + 1]) for i in range(2, len(items), 2)]
                out.append((f"{logical} {title!r}", items[0], items[1], dims))
    return out


def resource_names(template, type_, attribute):
    names = {}
    for logical in template.of_type(type_):
        value = template.ref(logical) if attribute == "Ref" else template.get_att(logical, attribute)
        names[value] = logical
    return names


def check(template, series):
    """Findings (failures) and the emitted series no alarm watches."""
    failures, watched_keys, rows, notes = [], set(), [], []
    for logical in template.of_type("AWS::CloudWatch::Alarm"):
        props = template.resources[logical].get("Properties", {})
        if not template.resolve(props.get("AlarmActions") or []):
            failures.append(f"{logical}: no AlarmActions (it would change state and tell no one)")
        for label, namespace, metric, dims in watched(template, logical):
            if namespace is None:
                failures.append(f"{label}: watches no metric (no MetricName and no MetricStat)")
                continue
            key = series_key(namespace, metric, [d[0] for d in dims])
            watched_keys.add(key)
            rows.append((label, key))
            if namespace.startswith("AWS/"):
                failures.extend(check_aws(template, label, namespace, metric, dims))
            elif key in series:
                unproven = cannot_fire(props, series[key]) if label == logical else None
                if unproven:
                    failures.append(f"{label}: {unproven}")
                for name, _, value in dims:
                    seen = series[key]["values"].get(name)
                    if seen and str(value) not in seen:
                        notes.append(f"{label}: {name}={value!r} here; the captured lines carry "
                                     f"{', '.join(sorted(seen)[:5])} (fine if the deployment sets it)")
            else:
                near = sorted(show(k) for k in series if k[0] == namespace and k[1] == metric)
                hint = f"; emitted as: {', '.join(near)}" if near else "; no line emits this metric at all"
                failures.append(f"{label}: watches {show(key)}, which nothing emits{hint}")
    # A dashboard's custom series are emitted, and its AWS ones exist, as
    # for an alarm: a graph of a series nothing writes stays empty.
    graphs = 0
    for label, namespace, metric, dims in dashboard_metrics(template):
        key = series_key(namespace, metric, [d[0] for d in dims])
        graphs += 1
        if namespace.startswith("AWS/"):
            failures.extend(check_aws(template, label, namespace, metric, dims))
        elif key not in series:
            failures.append(f"{label}: shows {show(key)}, which nothing emits")
    if graphs:
        notes.append(f"{graphs} dashboard series checked as the alarms' are")
    unwatched = sorted((k for k in series if k not in watched_keys), key=show)
    return failures, unwatched, rows, notes


CROSSES = {
    "GreaterThanThreshold": lambda value, threshold: value > threshold,
    "GreaterThanOrEqualToThreshold": lambda value, threshold: value >= threshold,
}


def cannot_fire(props, entry):
    """Why the captured values do not show the alarm able to fire, or None
    (proven, or not an alarm this reasoning covers)."""
    crosses = CROSSES.get(props.get("ComparisonOperator"))
    threshold, statistic = props.get("Threshold"), props.get("Statistic")
    period_ms = int(props.get("Period", 60)) * 1000
    if (crosses is None or statistic not in ("Maximum", "Sum")
            or not isinstance(threshold, (int, float)) or "points" not in entry):
        return None
    # One datapoint per period of each series: a series is its dimension
    # values (two test stacks' `service`s are two series), as CloudWatch
    # keeps them apart; a line without a Timestamp is no datapoint.
    periods = {}
    for stamp, dims_values, value in entry["points"]:
        if not stamp:
            continue
        bucket = (dims_values, stamp // period_ms)
        previous = periods.get(bucket)
        if previous is None:
            periods[bucket] = value
        else:
            periods[bucket] = previous + value if statistic == "Sum" else max(previous, value)
    best = max(periods.values(), default=0)
    if crosses(best, threshold):
        return None
    return (f"no period of the captured values crosses its threshold ({statistic} "
            f"{props['ComparisonOperator']} {threshold}; the most in one period is {best}): "
            "no test shows it can fire")


def check_aws(template, label, namespace, metric, dims):
    spec = AWS_METRICS.get(namespace)
    if spec is None:
        return [f"{label}: namespace {namespace} is not modelled by this check (add it to AWS_METRICS)"]
    problems = []
    if metric not in spec["metrics"]:
        problems.append(f"{label}: {namespace} publishes no metric {metric!r}")
    names = {d[0] for d in dims}
    if names not in spec["dimensions"]:
        allowed = " | ".join("[" + ", ".join(sorted(s)) + "]" for s in spec["dimensions"])
        problems.append(f"{label}: {namespace} {metric} has no dimension set [{', '.join(sorted(names))}]"
                        f" (AWS publishes {allowed})")
    for name, raw, value in dims:
        if name in RESOURCE_DIMENSIONS:
            type_, attribute = RESOURCE_DIMENSIONS[name]
            known = resource_names(template, type_, attribute)
            if value not in known:
                how = "GetAtt X.QueueName" if attribute == "QueueName" else (
                    "GetAtt X.TopicName" if attribute == "TopicName" else "Ref X")
                problems.append(f"{label}: dimension {name}={json.dumps(raw)} names no {type_} of the "
                                f"template (resolves to {value!r}; use {how})")
        elif name in ACCEPTED_LITERALS and value not in ACCEPTED_LITERALS[name]:
            problems.append(f"{label}: dimension {name}={value!r} is not one of this stack's")
    return problems


def run(template_doc, emf_paths, schema, out=print):
    template = Template(template_doc)
    series, rejected, lines = read_emf(emf_paths)
    emitted = dict(series)
    emitted.update(metric_filter_series(template))
    failures, unwatched, rows, notes = check(template, emitted)
    failures += schema_findings(emitted, schema)
    out(f"check_alarms: {len(rows)} alarm metrics; {lines} EMF lines from {', '.join(emf_paths)} "
        f"-> {len(series)} series; {len(emitted) - len(series)} from metric filters")
    out("")
    out(f"REJECTED EMF LINES ({len(rejected)}){':' if rejected else ''}")
    for where, why, text in rejected:
        out(f"  {where}: {why}: {text}")
    out(f"ALARMS ({len(rows)}):")
    for label, key in rows:
        out(f"  {label}: {show(key)}")
    out(f"FAILURES ({len(failures)}){':' if failures else ''}")
    for f in failures:
        out(f"  {f}")
    for note in notes:
        out(f"  note: {note}")
    out(f"EMITTED, NO ALARM ({len(unwatched)}) (information):")
    for key in unwatched:
        entry = emitted[key]
        values = "; ".join(f"{d}={','.join(sorted(v)[:4])}" for d, v in sorted(entry["values"].items()))
        out(f"  {show(key)}  ({entry['source']}, {entry['count']} lines{'; ' + values if values else ''})")
    failed = bool(failures or rejected)
    out("")
    out(f"check_alarms: {'FAILED' if failed else 'ok'}"
        + (f" ({len(failures)} alarm findings, {len(rejected)} rejected EMF lines)" if failed else ""))
    return failures, rejected


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--template", default="target/infra/template.json")
    parser.add_argument("--emf", action="append", help="EMF capture (JSONL); repeatable; "
                        "default target/checks/emf.jsonl")
    parser.add_argument("--self-test", nargs="?", const="", metavar="ALARM",
                        help="remove the Dimensions of ALARM (default: the first custom-namespace alarm "
                             "with dimensions) in a copy; pass only if the check then fails on it")
    parser.add_argument("--self-test-out", default="target/checks/alarm-self-test-template.json")
    parser.add_argument("--schema", default=str(Path(__file__).resolve().parent.parent / "docs/operations.md"),
                        help="the document with the metric schema table")
    args = parser.parse_args()
    emf = args.emf or ["target/checks/emf.jsonl"]
    path = Path(args.template)
    if not path.exists():
        sys.exit(f"check_alarms: no transformed template at {path} (run the SAM transform first)")
    doc = json.loads(path.read_text())
    try:
        schema = read_schema(args.schema)
        if args.self_test is None:
            failures, rejected = run(doc, emf, schema)
            sys.exit(1 if failures or rejected else 0)
        broken = copy.deepcopy(doc)
        resources = broken["Resources"]
        candidates = []  # (alarm, the Dimensions holder to clear)
        for k, r in resources.items():
            if r["Type"] != "AWS::CloudWatch::Alarm":
                continue
            p = r["Properties"]
            if p.get("Dimensions") and not str(p.get("Namespace", "AWS/")).startswith("AWS/"):
                candidates.append((k, p))
            for q in p.get("Metrics") or []:
                m = (q.get("MetricStat") or {}).get("Metric") or {}
                if m.get("Dimensions") and not str(m.get("Namespace", "AWS/")).startswith("AWS/"):
                    candidates.append((k, m))
        chosen = [c for c in candidates if c[0] == args.self_test] if args.self_test else candidates[:1]
        if not chosen:
            sys.exit(f"check_alarms self-test: no custom-namespace alarm with Dimensions to break "
                     f"({args.self_test or 'none found'})")
        target, holder = chosen[0]
        del holder["Dimensions"]
        Path(args.self_test_out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.self_test_out).write_text(json.dumps(broken, indent=1) + "\n")
        lines = []
        failures, _ = run(broken, emf, schema, out=lines.append)
        caught = [f for f in failures if f.split(":")[0].split(".")[0] == target and "nothing emits" in f]
        unlisted, _ = run(doc, emf, set(), out=lambda _: None)
        if not any("is not in the metric schema" in f for f in unlisted):
            print("check_alarms self-test: FAILED: an empty metric schema was not caught")
            sys.exit(1)
        # A dashboard graph of a metric nothing emits is caught too.
        dashboards = [k for k, r in doc["Resources"].items() if r["Type"] == "AWS::CloudWatch::Dashboard"]
        for logical in dashboards:
            unseen = copy.deepcopy(doc)
            body = unseen["Resources"][logical]["Properties"]["DashboardBody"]
            text = body["Fn::Sub"] if isinstance(body, dict) else body
            if '"ActionsUncertain"' not in text:
                print(f"check_alarms self-test: FAILED: {logical} shows no ActionsUncertain to break")
                sys.exit(1)
            text = text.replace('"ActionsUncertain"', '"ActionsUncertainNeverEmitted"', 1)
            unseen["Resources"][logical]["Properties"]["DashboardBody"] = (
                {"Fn::Sub": text} if isinstance(body, dict) else text)
            shown, _ = run(unseen, emf, schema, out=lambda _: None)
            if not any(f.startswith(logical) and "ActionsUncertainNeverEmitted" in f for f in shown):
                print(f"check_alarms self-test: FAILED: {logical} showing a metric nothing emits "
                      "was not caught")
                sys.exit(1)
        # An alarm whose threshold no captured value crosses is caught.
        unreachable = copy.deepcopy(doc)
        streak = unreachable["Resources"].get("FailureStreakAlarm")
        if streak is None:
            print("check_alarms self-test: FAILED: no FailureStreakAlarm to raise")
            sys.exit(1)
        streak["Properties"]["Threshold"] = 1e9
        raised, _ = run(unreachable, emf, schema, out=lambda _: None)
        if not any(f.startswith("FailureStreakAlarm:") and "can fire" in f for f in raised):
            print("check_alarms self-test: FAILED: a threshold nothing crosses was not caught")
            sys.exit(1)
        if caught:
            print(f"check_alarms self-test: ok: with {target}'s Dimensions removed "
                  f"({args.self_test_out}) the check fails: {caught[0]}; a dashboard graph of "
                  "a metric nothing emits fails it too, and so does a threshold no captured "
                  "value crosses")
            sys.exit(0)
        print("\n".join(lines))
        print(f"check_alarms self-test: FAILED: removing {target}'s Dimensions was not caught")
        sys.exit(1)
    except Invalid as e:
        sys.exit(f"check_alarms: {e}")


if __name__ == "__main__":
    main()
