#!/usr/bin/env node
// hookgate iam-check: every AWS call the emulator recorded (HOOKGATE_CALL_LOG)
// is evaluated against the calling function's role in the transformed template
// (or, for the operator tools, the stack's operator policies) with
// @cloud-copilot/iam-simulate. Fails on any denied call, any recorded resource
// that is no resource of the template, any AWS managed policy on a role, and
// any granted (Sid × action × resource) that no call exercised and whose Sid
// has no reason in the role's Metadata.UnexercisedReasons.
//
// Test-time tool only (the simulator is AGPL-3.0): run as a separate process,
// never bundled into anything deployed. See docs/iam.md.

import { readFileSync, writeFileSync, existsSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { runSimulation } from '@cloud-copilot/iam-simulate'
import { Template, TemplateError, ACCOUNT, REGION, PARTITION } from './template.mjs'

const USAGE = `usage: node check.mjs [--template target/infra/template.json] [--calls FILE]...
       [--remove-action APP=ACTION]... [--self-test APP=ACTION] [--app-alias NAME=APP]...
       [--grant-operator ACTION] [--report FILE.json]

  --template          the transformed CloudFormation (JSON), default target/infra/template.json
  --calls             a call log written by tests/emulator/server.py (HOOKGATE_CALL_LOG); repeatable;
                      default target/checks/calls.jsonl
  --remove-action     drop ACTION from APP's policies before checking (a broken copy of the role)
  --self-test         APP=ACTION: --remove-action APP=ACTION, and exit 0 only if the check then
                      reports that APP's ACTION calls as denied (the check has teeth), else 1
  --app-alias         NAME=APP: read calls recorded under app NAME as APP's (e.g. hookgate-operator=operator)
  --grant-operator    ACTION: a broken copy whose operator policies also grant ACTION on "*"; exit 0
                      only if the check then reports the operator reading (or writing) a secret, or
                      reading the grants table (the rule has teeth)
  --report            also write the findings as JSON

Exit: 0 passed, 1 a finding, 2 bad input.`

// The SDK app name a component tags its AWS clients with -> the function whose role it runs with.
export const APP_FUNCTIONS = {
  ingress: 'IngressFunction',
  action: 'ActionFunction',
  'dlq-triage': 'DlqTriageFunction',
  sweep: 'SweepFunction',
  ops: 'OpsFunction',
}
export const OPERATOR_APP = 'operator'
// The stack's managed policies the operator tools run with.
export const OPERATOR_POLICIES = ['OperatorReadPolicy', 'OperatorDecidePolicy']
// The callers that are not a function: the tests' and the demo's own setup
// and inspection, the local runner's stand-in for EventBridge invoking the
// ingress, the local front of the ops API naming callers as API Gateway's
// IAM authorizer does (STS GetCallerIdentity), and boto3 provisioning (no app
// name). Any other app is a finding: a function's code path whose clients
// are not tagged would otherwise escape.
export const HARNESS_APPS = new Set(['hookgate-tests', 'hookgate-demo', 'hookgate-local', 'local-rule', 'local-front', 'other'])
// What no operator policy may grant (docs/iam.md, "No secret in an operator's
// hands"): a secret's value, from either store, a write of one (a rotated
// refresh token is the action function's to write), a read of the grants
// table (its items hold live OAuth2 access tokens), or a decrypt with the key
// that encrypts them. Probed on the stack's own names and on any other, and
// KMS with and without the call coming through SSM, Secrets Manager or
// DynamoDB, so a wildcard or a condition cannot hide a grant. Evaluated with
// SecretsKmsKeyArn set (PROBE_KEY), so the conditional grants are there to be
// found.
const PROBE_KEY = `arn:${PARTITION}:kms:${REGION}:${ACCOUNT}:key/00000000-0000-0000-0000-00000000beef`
// The template's table of OAuth2 grants (infra/template.yaml, GrantsTable).
export const GRANTS_TABLE = 'GrantsTable'
/** `stack`: the stack's name; `grantsTable`: the grants table's ARN, if the template has one. */
export function secretReadProbes(stack, grantsTable) {
  const parameter = (name) => `arn:${PARTITION}:ssm:${REGION}:${ACCOUNT}:parameter/${name}`
  const secret = (name) => `arn:${PARTITION}:secretsmanager:${REGION}:${ACCOUNT}:secret:${name}-AbCdEf`
  const probes = []
  for (const name of [`hookgate/${stack}/probe`, 'probe']) {
    for (const action of ['ssm:GetParameter', 'ssm:GetParameters', 'ssm:GetParametersByPath', 'ssm:GetParameterHistory']) {
      probes.push({ action, resource: parameter(name) })
    }
    probes.push({ action: 'secretsmanager:GetSecretValue', resource: secret(name) })
    for (const action of ['secretsmanager:PutSecretValue', 'secretsmanager:UpdateSecret']) {
      probes.push({ action, resource: secret(name) })
    }
    probes.push({ action: 'ssm:PutParameter', resource: parameter(name) })
  }
  probes.push({ action: 'secretsmanager:BatchGetSecretValue', resource: '*' })
  if (grantsTable) {
    for (const action of ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:Scan']) {
      probes.push({ action, resource: grantsTable })
    }
  }
  // KMS authorizes by the key policy first: the default one, which lets the
  // account's IAM policies decide, so an identity policy's grant is enough.
  const keyPolicy = {
    Version: '2012-10-17',
    Statement: [{ Sid: 'DefaultKeyPolicy', Effect: 'Allow', Principal: { AWS: `arn:${PARTITION}:iam::${ACCOUNT}:root` }, Action: 'kms:*', Resource: '*' }],
  }
  for (const via of [undefined, `ssm.${REGION}.amazonaws.com`, `secretsmanager.${REGION}.amazonaws.com`, `dynamodb.${REGION}.amazonaws.com`]) {
    probes.push({ action: 'kms:Decrypt', resource: PROBE_KEY, context: via ? { 'kms:ViaService': via } : {}, resourcePolicy: keyPolicy })
  }
  return probes
}

/** The operator's secret reads (`secretReadProbes`) its policies allow; `extra`: a broken copy's added action. */
async function operatorSecretReads(doc, extra) {
  const template = new Template(doc, { parameters: { SecretsKmsKeyArn: PROBE_KEY } })
  const operator = principals(template)[OPERATOR_APP]
  if (extra) {
    operator.policies.push({
      name: 'BrokenCopy',
      policy: { Version: '2012-10-17', Statement: [{ Sid: 'BrokenCopy', Effect: 'Allow', Action: extra, Resource: '*' }] },
    })
  }
  const allowed = []
  const grantsTable = template.resources[GRANTS_TABLE]?.Type === 'AWS::DynamoDB::Table' ? template.getAtt(GRANTS_TABLE, 'Arn') : undefined
  for (const probe of secretReadProbes(template.pseudo['AWS::StackName'], grantsTable)) {
    const result = await simulate(operator, probe.action, probe.resource, probe.context, probe.resourcePolicy)
    if (result.resultType !== 'error' && result.overallResult === 'Allowed') allowed.push(probe)
  }
  return allowed
}

// Requests the emulator serves for itself (request counts), not AWS APIs.
const EMULATOR_PREFIX = 'hookgate-emulator:'

// Recorded ARN -> (resource type of the template, how to rebuild the deployed
// ARN: by default the resource's Arn followed by the recorded rest, an index).
const LOGICAL_RESOURCES = [
  { re: /^arn:aws:dynamodb:[^:]*:[^:]*:table\/([^/]+)(\/.*)?$/, type: 'AWS::DynamoDB::Table' },
  { re: /^arn:aws:sqs:[^:]*:[^:]*:([^:/]+)()$/, type: 'AWS::SQS::Queue' },
  { re: /^arn:aws:lambda:[^:]*:[^:]*:function:([^:]+)(:.*)?$/, type: 'AWS::Lambda::Function' },
  { re: /^arn:aws:events:[^:]*:[^:]*:rule\/(?:[^/]+\/)?([^/]+)()$/, type: 'AWS::Events::Rule' },
  { re: /^arn:aws:sns:[^:]*:[^:]*:([^:]+)()$/, type: 'AWS::SNS::Topic' },
  // A log group (`log-group:NAME`) or one of its streams (`…:log-stream:S`).
  // CloudWatch Logs authorizes a group's actions on the group's ARN with the
  // trailing `:*` (the ARN Fn::GetAtt and DescribeLogGroups give, the form AWS
  // documents for IAM policies), so a group is evaluated as that ARN, and a
  // stream as `…:log-group:NAME:log-stream:S`.
  {
    re: /^arn:aws:logs:[^:]*:[^:]*:log-group:([^:]+)(:log-stream:.*)?$/,
    type: 'AWS::Logs::LogGroup',
    deployed: (arn, rest) => (rest ? arn.replace(/:\*$/, '') + rest : arn),
  },
]

function fail(message) {
  console.error(`iam-check: ${message}`)
  process.exit(2)
}

// Stands for the stack's name in the names the template gives (a character no name has).
const STACK_MARK = '\u0000'
const namePatterns = new WeakMap()

/** { logical, before, after } for each resource of `type` whose name the template gives around `${AWS::StackName}`. */
function stackNamed(template, type) {
  if (!namePatterns.has(template)) {
    const marked = new Template(template.doc)
    marked.pseudo['AWS::StackName'] = STACK_MARK
    const patterns = []
    for (const [logical, resource] of Object.entries(template.resources)) {
      let physical
      try {
        physical = marked.physicalName(logical)
      } catch {
        continue // a name this check does not model: never matched
      }
      const parts = String(physical).split(STACK_MARK)
      if (parts.length === 2) patterns.push({ logical, type: resource.Type, before: parts[0], after: parts[1] })
    }
    namePatterns.set(template, patterns)
  }
  return namePatterns.get(template).filter((p) => p.type === type)
}

/**
 * The logical id a recorded local name stands for: its last `-` segment when
 * that is a logical id of `type` (`hg-1-2-dedup-InboxTable`), else the
 * resource of `type` whose name the template gives with `${AWS::StackName}`
 * in it, the local stack's name in its place (the local prefix stands for the
 * stack: `hookgate-local-contacts` is the rule named `${AWS::StackName}-contacts`,
 * `/aws/lambda/hookgate-local-ingress` the log group named
 * `/aws/lambda/${AWS::StackName}-ingress`); the longest such name wins.
 */
function logicalOf(template, type, name) {
  const last = name.split('-').pop()
  if (template.resources[last]?.Type === type) return last
  let best
  for (const { logical, before, after } of stackNamed(template, type)) {
    const length = before.length + after.length
    if (name.length <= length || !name.startsWith(before) || !name.endsWith(after)) continue
    if (name.slice(before.length, name.length - after.length).includes('/')) continue // not a stack name
    if (!best || length > best.length) best = { logical, length }
  }
  return best?.logical
}

/** A recorded ARN (local names) -> the ARN it has when deployed, or an error string. */
export function deployedArn(template, recorded) {
  if (recorded === '*') return { arn: '*' }
  const events = recorded.match(/^arn:aws:events:[^:]*:[^:]*:event-bus\/.+$/)
  if (events) {
    // Every bus the code writes to is the stack's bus: `default` (HOOKGATE_EVENT_BUS).
    return { arn: `arn:${PARTITION}:events:${REGION}:${ACCOUNT}:event-bus/default` }
  }
  // A stack's secrets are named under `hookgate/<stack>/`: a local stack's
  // (a test's, the demo's) stand for the deployed stack's, the rest of the
  // name kept. Any other name is evaluated as recorded.
  const own = (name) => name.replace(/^hookgate\/[^/]+\/(?=.)/, `hookgate/${template.pseudo['AWS::StackName']}/`)
  const ssm = recorded.match(/^arn:aws:ssm:[^:]*:[^:]*:parameter\/(.*)$/)
  if (ssm) return { arn: `arn:${PARTITION}:ssm:${REGION}:${ACCOUNT}:parameter/${own(ssm[1])}` }
  if (/^arn:aws:cloudformation:[^:]*:[^:]*:stack\/[^/]+\/.+$/.test(recorded)) {
    // Any stack: the local stack's name stands for the stack's
    // (scripts/provision.py registers the local stack under it).
    return { arn: template.pseudo['AWS::StackId'] }
  }
  const api = recorded.match(/^arn:aws:execute-api:[^:]*:[^:]*:[^/]+\/([^/]+)\/(.+)$/)
  if (api) {
    // The local front's API (tests/dev/src/ops_front.rs) stands for the stack's
    // HTTP API; the stage and `METHOD/path` are kept.
    const id = template.ref('WebhookApi')
    return { arn: `arn:${PARTITION}:execute-api:${REGION}:${ACCOUNT}:${id}/${api[1]}/${api[2]}`, logical: 'WebhookApi' }
  }
  const secret = recorded.match(/^arn:aws:secretsmanager:[^:]*:[^:]*:secret:(.+)$/)
  if (secret) {
    // A deployed secret's ARN ends with `-` and 6 random characters.
    return { arn: `arn:${PARTITION}:secretsmanager:${REGION}:${ACCOUNT}:secret:${own(secret[1])}-AbCdEf` }
  }
  for (const { re, type, deployed } of LOGICAL_RESOURCES) {
    const m = recorded.match(re)
    if (!m) continue
    const logical = logicalOf(template, type, m[1])
    if (!logical) {
      return {
        error: `${m[1]} names no ${type} of the template (its last "-" segment must be a logical id, ` +
          `or it must be a name the template gives, with \${AWS::StackName} in it)`,
      }
    }
    const arn = template.getAtt(logical, 'Arn')
    return { arn: deployed ? deployed(arn, m[2]) : arn + (m[2] ?? ''), logical }
  }
  return { error: 'no mapping from this ARN to a deployed resource' }
}

/** The principals to check: app -> { role, policies, managed, boundary, reasons }. */
function principals(template) {
  const out = {}
  for (const [app, fn] of Object.entries(APP_FUNCTIONS)) {
    const role = template.functionRole(fn)
    out[app] = { label: `${fn} (${role})`, arn: template.getAtt(role, 'Arn'), ...template.rolePolicies(role) }
  }
  // The operator: one identity with both of the stack's operator policies
  // attached (Read and Decide), the reasons of each.
  const policies = []
  let reasons = {}
  for (const logical of OPERATOR_POLICIES) {
    const r = template.resources[logical]
    if (r?.Type !== 'AWS::IAM::ManagedPolicy') throw new TemplateError(`${logical} is not an AWS::IAM::ManagedPolicy of the template`)
    policies.push({ name: logical, policy: template.resolve(r.Properties.PolicyDocument) })
    reasons = { ...reasons, ...(r.Metadata?.UnexercisedReasons ?? {}) }
  }
  out[OPERATOR_APP] = {
    label: `operator (${OPERATOR_POLICIES.join(' + ')})`,
    arn: `arn:${PARTITION}:iam::${ACCOUNT}:role/hookgate-operator`,
    policies,
    managed: [],
    reasons,
  }
  return out
}

const asList = (v) => (v === undefined ? [] : Array.isArray(v) ? v : [v])

/** Every granted (policy, statement, action, resource): the unit the exercised check counts. */
function grants(principal) {
  const list = []
  for (const { name, policy } of principal.policies) {
    for (const [i, st] of asList(policy.Statement).entries()) {
      if (st.Effect !== 'Allow') continue
      const sid = st.Sid ?? `#${i + 1}`
      const actions = st.Action !== undefined ? asList(st.Action) : [`NotAction ${JSON.stringify(st.NotAction)}`]
      const resources = st.Resource !== undefined ? asList(st.Resource) : [`NotResource ${JSON.stringify(st.NotResource)}`]
      for (const action of actions) {
        for (const resource of resources) list.push({ policy: name, index: i, sid, statement: st, action, resource })
      }
    }
  }
  return list
}

/** Removes ACTION from every statement of a principal (the self-test's broken copy). */
function removeAction(principal, action) {
  let removed = 0
  for (const p of principal.policies) {
    const statements = asList(p.policy.Statement).flatMap((st) => {
      if (st.Action === undefined) return [st]
      const kept = asList(st.Action).filter((a) => a.toLowerCase() !== action.toLowerCase())
      removed += asList(st.Action).length - kept.length
      return kept.length ? [{ ...st, Action: kept }] : []
    })
    p.policy = { ...p.policy, Statement: statements }
  }
  return removed
}

async function simulate(principal, action, resource, context = {}, resourcePolicy = undefined) {
  const simulation = {
    request: {
      principal: principal.arn,
      action,
      resource: { resource, accountId: ACCOUNT },
      contextVariables: context,
    },
    identityPolicies: principal.policies,
    serviceControlPolicies: [],
    resourceControlPolicies: [],
  }
  if (resourcePolicy) simulation.resourcePolicy = resourcePolicy
  if (principal.boundary) simulation.permissionBoundaryPolicies = [{ name: 'boundary', policy: principal.boundary }]
  return runSimulation(simulation, {})
}

/** The (policy, statement index, action pattern, resource pattern) an allowed request used. */
function exercisedBy(result, principal) {
  const used = []
  const analyses = result.resultType === 'single' ? [result.result] : result.results
  for (const r of analyses) {
    for (const st of r.analysis?.identityAnalysis?.allowStatements ?? []) {
      const policy = principal.policies.find((p) => p.name === st.policyId)
      const index = asList(policy?.policy.Statement).findIndex((s) => JSON.stringify(s) === JSON.stringify(st.statement))
      const actions = asList(st.explain.actions).filter((a) => a.matches).map((a) => a.action)
      const resources = asList(st.explain.resources).filter((x) => x.matches).map((x) => x.resource)
      for (const a of actions.length ? actions : [`NotAction ${JSON.stringify(st.statement.NotAction)}`]) {
        for (const x of resources.length ? resources : [`NotResource ${JSON.stringify(st.statement.NotResource)}`]) {
          used.push(`${st.policyId}\u0000${index}\u0000${a}\u0000${x}`)
        }
      }
    }
  }
  return used
}

function readCalls(paths) {
  const calls = []
  for (const path of paths) {
    if (!existsSync(path)) fail(`no call log at ${path} (run the tests with HOOKGATE_CALL_LOG=${path})`)
    const lines = readFileSync(path, 'utf8').split('\n')
    for (const [n, line] of lines.entries()) {
      if (!line.trim()) continue
      try {
        const call = JSON.parse(line)
        if (typeof call.app !== 'string' || typeof call.action !== 'string' || !Array.isArray(call.resources)) throw new Error('missing app/action/resources')
        calls.push(call)
      } catch (e) {
        fail(`${path}:${n + 1}: not a call record (${e.message}): ${line.slice(0, 200)}`)
      }
    }
  }
  return calls
}

async function main() {
  let args
  try {
    args = parseArgs({
      options: {
        template: { type: 'string', default: 'target/infra/template.json' },
        calls: { type: 'string', multiple: true },
        'remove-action': { type: 'string', multiple: true, default: [] },
        'self-test': { type: 'string' },
        'app-alias': { type: 'string', multiple: true, default: [] },
        'grant-operator': { type: 'string' },
        report: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values
  } catch (e) {
    fail(`${e.message}\n${USAGE}`)
  }
  if (args.help) {
    console.log(USAGE)
    return 0
  }
  const callPaths = args.calls?.length ? args.calls : ['target/checks/calls.jsonl']
  if (!existsSync(args.template)) fail(`no transformed template at ${args.template} (run scripts/transform.py)`)
  let template, who, doc
  try {
    doc = JSON.parse(readFileSync(args.template, 'utf8'))
    template = new Template(doc)
    who = principals(template)
  } catch (e) {
    if (e instanceof TemplateError || e instanceof SyntaxError) fail(e.message)
    throw e
  }
  const selfTest = args['self-test']
  if (selfTest) args['remove-action'].push(selfTest)
  for (const spec of args['remove-action']) {
    const [app, action] = spec.split('=')
    if (!who[app] || !action) fail(`--remove-action ${spec}: want APP=ACTION with APP one of ${Object.keys(who).join(', ')}`)
    const n = removeAction(who[app], action)
    if (!n) fail(`--remove-action ${spec}: ${who[app].label} grants no ${action}`)
    console.log(`iam-check: self-test: ${action} removed from ${who[app].label} (${n} grant(s))`)
  }

  const calls = readCalls(callPaths)
  const aliases = Object.fromEntries(args['app-alias'].map((a) => a.split('=')))
  for (const [name, app] of Object.entries(aliases)) {
    if (!who[app]) fail(`--app-alias ${name}=${app}: ${app} is not one of ${Object.keys(who).join(', ')}`)
  }
  for (const call of calls) if (aliases[call.app]) call.app = aliases[call.app]
  const perApp = {}
  const ignored = {}
  const unknownApps = {}
  const distinct = new Map()
  for (const call of calls) {
    if (!call.action.startsWith(EMULATOR_PREFIX) && !who[call.app] && !HARNESS_APPS.has(call.app)) {
      unknownApps[call.app] = (unknownApps[call.app] ?? 0) + 1
      continue
    }
    if (call.action.startsWith(EMULATOR_PREFIX) || !who[call.app]) {
      ignored[call.app] = (ignored[call.app] ?? 0) + 1
      continue
    }
    perApp[call.app] = (perApp[call.app] ?? 0) + 1
    const resources = call.resources.length ? call.resources : ['']
    for (const r of resources) {
      const key = `${call.app} ${call.action} ${r}`
      if (!distinct.has(key)) distinct.set(key, { app: call.app, action: call.action, recorded: r, count: 0 })
      distinct.get(key).count++
    }
  }

  const denied = []
  const unmapped = []
  const invalid = []
  const exercised = new Set()
  for (const call of distinct.values()) {
    const mapped = call.recorded ? deployedArn(template, call.recorded) : { error: 'the emulator recorded no resource for this call' }
    if (mapped.error) {
      unmapped.push({ ...call, error: mapped.error })
      continue
    }
    call.deployed = mapped.arn
    const principal = who[call.app]
    const result = await simulate(principal, call.action, mapped.arn)
    if (result.resultType === 'error') {
      invalid.push({ ...call, error: result.errors.message })
      continue
    }
    if (result.overallResult !== 'Allowed') {
      denied.push({ ...call, result: result.overallResult })
      continue
    }
    for (const u of exercisedBy(result, principal)) exercised.add(`${call.app}\u0000${u}`)
  }

  const secretReads = await operatorSecretReads(doc, args['grant-operator'])

  const managed = []
  const unexercised = []
  const staleReasons = []
  for (const [app, principal] of Object.entries(who)) {
    for (const policyArn of principal.managed) managed.push({ app, principal: principal.label, arn: policyArn })
    const sidsUnexercised = new Set()
    for (const g of grants(principal)) {
      if (exercised.has(`${app}\u0000${g.policy}\u0000${g.index}\u0000${g.action}\u0000${g.resource}`)) continue
      const reason = principal.reasons[g.sid]
      sidsUnexercised.add(g.sid)
      unexercised.push({ app, principal: principal.label, sid: g.sid, action: g.action, resource: g.resource, reason: reason ?? null })
    }
    for (const sid of Object.keys(principal.reasons)) {
      if (!sidsUnexercised.has(sid)) staleReasons.push({ app, principal: principal.label, sid })
    }
  }

  // ---- report ----
  const out = []
  const line = (s = '') => out.push(s)
  line(`iam-check: ${args.template}; ${calls.length} recorded calls from ${callPaths.join(', ')}`)
  for (const [app, fn] of Object.entries({ ...APP_FUNCTIONS, [OPERATOR_APP]: 'operator policy' })) {
    if (!who[app]) continue
    line(`  ${app.padEnd(11)} ${String(perApp[app] ?? 0).padStart(7)} calls  -> ${who[app].label}`)
  }
  const ign = Object.entries(ignored).sort()
  line(`  ignored: ${ign.length ? ign.map(([a, n]) => `${a} ${n}`).join(', ') : 'none'} (not a function or the operator)`)
  line(`  ${distinct.size} distinct (app, action, resource) evaluated with @cloud-copilot/iam-simulate`)
  line()
  const section = (title, rows, fmt) => {
    line(`${title} (${rows.length})${rows.length ? ':' : ''}`)
    for (const r of rows) line(`  ${fmt(r)}`)
  }
  section('UNKNOWN CALLERS', Object.entries(unknownApps), ([a, n]) => `${a}: ${n} calls (tag its clients with a function's name, or list it as a harness app)`)
  section('DENIED', denied, (d) => `${d.app}  ${d.action}  ${d.deployed}  [${d.result}; recorded ${d.recorded}, ${d.count}x]`)
  section('UNMAPPED RESOURCES', unmapped, (u) => `${u.app}  ${u.action}  ${u.recorded || '-'}  (${u.error})`)
  section('INVALID REQUESTS', invalid, (u) => `${u.app}  ${u.action}  ${u.deployed}  (${u.error})`)
  section('OPERATOR SECRET READS (no operator policy may read or write a secret, read the grants table, or decrypt)', secretReads,
    (r) => `${r.action}  ${r.resource}${r.context && Object.keys(r.context).length ? '  ' + JSON.stringify(r.context) : ''}`)
  section('AWS MANAGED POLICIES', managed, (m) => `${m.principal}  ${m.arn}  (replace with an inline statement)`)
  const noReason = unexercised.filter((u) => !u.reason)
  section('UNEXERCISED GRANTS', unexercised, (u) => `${u.app}  ${u.sid}  ${u.action}  ${u.resource}  -- ${u.reason ?? 'NO REASON (add Metadata.UnexercisedReasons.' + u.sid + ' or remove the grant)'}`)
  if (staleReasons.length) {
    section('note: reasons for Sids with no unexercised grant (all exercised, or the statement is absent under the default parameters)', staleReasons, (s) => `${s.principal}  ${s.sid}`)
  }
  const failures = []
  if (Object.keys(unknownApps).length) failures.push(`${Object.keys(unknownApps).length} unknown callers`)
  if (denied.length) failures.push(`${denied.length} denied`)
  if (unmapped.length) failures.push(`${unmapped.length} unmapped`)
  if (invalid.length) failures.push(`${invalid.length} invalid`)
  if (managed.length) failures.push(`${managed.length} managed policies`)
  if (secretReads.length) failures.push(`${secretReads.length} secret reads granted to operators`)
  if (noReason.length) failures.push(`${noReason.length} unexercised grants without a reason`)
  line()
  line(failures.length ? `iam-check: FAILED: ${failures.join(', ')}` : `iam-check: ok (${unexercised.length} unexercised grants, each with a reason)`)
  console.log(out.join('\n'))
  if (args.report) {
    writeFileSync(args.report, JSON.stringify({ template: args.template, calls: callPaths, perApp, ignored, denied, unmapped, invalid, managed, secretReads, unexercised, staleReasons }, null, 2) + '\n')
  }
  if (args['grant-operator']) {
    const action = args['grant-operator']
    if (secretReads.length) {
      console.log(`iam-check self-test: ok: with ${action} granted to the operator, ${secretReads.length} secret read(s) are reported`)
      return 0
    }
    console.log(`iam-check self-test: FAILED: with ${action} granted to the operator, no secret read was reported`)
    return 1
  }
  if (selfTest) {
    const [app, action] = selfTest.split('=')
    const caught = denied.filter((d) => d.app === app && d.action.toLowerCase() === action.toLowerCase())
    if (caught.length) {
      console.log(`iam-check self-test: ok: with ${action} removed from ${who[app].label}, ${caught.length} recorded call(s) are denied`)
      return 0
    }
    console.log(`iam-check self-test: FAILED: with ${action} removed from ${who[app].label}, no recorded call was denied (do the tests exercise ${app}'s ${action}?)`)
    return 1
  }
  return failures.length ? 1 : 0
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(e)
    process.exit(2)
  },
)
