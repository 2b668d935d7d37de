// The transformed CloudFormation template as it would deploy: CloudFormation
// style physical names for the stack, and the intrinsics of IAM policies
// resolved to them. Pure data handling; the allow/deny decision is made by the
// policy simulator (check.mjs), never here.

import { createHash } from 'node:crypto'

export const ACCOUNT = '123456789012'
export const REGION = 'us-east-1'
export const PARTITION = 'aws'
export const STACK = 'hookgate'

/** The random suffix CloudFormation appends to generated names: deterministic here. */
function suffix(logical) {
  const hex = createHash('sha256').update(logical).digest('hex').toUpperCase()
  return hex.slice(0, 12)
}

/** `hookgate-Logical-SUFFIX`, the shape of a CloudFormation generated name. */
export function generatedName(logical) {
  return `${STACK}-${logical}-${suffix(logical)}`
}

const arn = (service, resource, region = REGION, account = ACCOUNT) =>
  `arn:${PARTITION}:${service}:${region}:${account}:${resource}`

export class TemplateError extends Error {}

export class Template {
  constructor(doc, { parameters = {} } = {}) {
    this.doc = doc
    this.resources = doc.Resources ?? {}
    this.params = {}
    for (const [name, p] of Object.entries(doc.Parameters ?? {})) {
      this.params[name] = parameters[name] ?? p.Default
    }
    this.pseudo = {
      'AWS::Region': REGION,
      'AWS::AccountId': ACCOUNT,
      'AWS::Partition': PARTITION,
      'AWS::StackName': STACK,
      'AWS::URLSuffix': 'amazonaws.com',
      'AWS::StackId': arn('cloudformation', `stack/${STACK}/00000000-0000-0000-0000-000000000000`),
    }
    this.conditions = {}
    this.names = {}
  }

  /** The deployed name of a resource (its Ref for most types). */
  physicalName(logical) {
    if (logical in this.names) return this.names[logical]
    const r = this.resources[logical]
    if (!r) throw new TemplateError(`no resource ${logical}`)
    const p = r.Properties ?? {}
    const explicit = {
      'AWS::DynamoDB::Table': 'TableName',
      'AWS::SQS::Queue': 'QueueName',
      'AWS::Lambda::Function': 'FunctionName',
      'AWS::Events::Rule': 'Name',
      'AWS::Events::EventBus': 'Name',
      'AWS::SNS::Topic': 'TopicName',
      'AWS::IAM::Role': 'RoleName',
      'AWS::Logs::LogGroup': 'LogGroupName',
      'AWS::SSM::Parameter': 'Name',
      'AWS::SecretsManager::Secret': 'Name',
      'AWS::Scheduler::Schedule': 'Name',
    }[r.Type]
    let name
    if (explicit && p[explicit] !== undefined) {
      name = this.resolve(p[explicit])
    } else if (r.Type === 'AWS::SQS::Queue' && p.FifoQueue) {
      name = generatedName(logical) + '.fifo'
    } else {
      name = generatedName(logical)
    }
    this.names[logical] = name
    return name
  }

  ref(logical) {
    if (logical in this.params) return this.params[logical]
    if (logical in this.pseudo) return this.pseudo[logical]
    const r = this.resources[logical]
    if (!r) throw new TemplateError(`Ref to unknown ${logical}`)
    const name = this.physicalName(logical)
    switch (r.Type) {
      case 'AWS::SQS::Queue':
        return `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${name}`
      case 'AWS::SNS::Topic':
      case 'AWS::SecretsManager::Secret':
      case 'AWS::IAM::ManagedPolicy':
        return this.getAtt(logical, 'Arn')
      default:
        return name
    }
  }

  getAtt(logical, attribute) {
    const r = this.resources[logical]
    if (!r) throw new TemplateError(`Fn::GetAtt of unknown ${logical}`)
    const name = this.physicalName(logical)
    const p = r.Properties ?? {}
    const t = r.Type
    if (attribute === 'Arn') {
      switch (t) {
        case 'AWS::DynamoDB::Table':
          return arn('dynamodb', `table/${name}`)
        case 'AWS::SQS::Queue':
          return arn('sqs', name)
        case 'AWS::Lambda::Function':
          return arn('lambda', `function:${name}`)
        case 'AWS::Events::Rule': {
          const bus = p.EventBusName ? this.resolve(p.EventBusName) : 'default'
          return bus === 'default' ? arn('events', `rule/${name}`) : arn('events', `rule/${bus.split('/').pop()}/${name}`)
        }
        case 'AWS::Events::EventBus':
          return arn('events', `event-bus/${name}`)
        case 'AWS::SNS::Topic':
          return arn('sns', name)
        case 'AWS::IAM::Role':
          return `arn:${PARTITION}:iam::${ACCOUNT}:role/${name}`
        case 'AWS::IAM::ManagedPolicy':
          return `arn:${PARTITION}:iam::${ACCOUNT}:policy/${name}`
        case 'AWS::Logs::LogGroup':
          return arn('logs', `log-group:${name}:*`)
        case 'AWS::SecretsManager::Secret':
          return arn('secretsmanager', `secret:${name}-AbCdEf`)
        case 'AWS::SSM::Parameter':
          return arn('ssm', `parameter/${name.replace(/^\//, '')}`)
        case 'AWS::KMS::Key':
          return arn('kms', `key/${name}`)
        case 'AWS::Scheduler::Schedule':
          return arn('scheduler', `schedule/default/${name}`)
        case 'AWS::CloudWatch::Alarm':
          return arn('cloudwatch', `alarm:${name}`)
        default: {
          const service = t.split('::')[1].toLowerCase()
          return arn(service, `${logical}/${name}`)
        }
      }
    }
    if (t === 'AWS::SQS::Queue' && attribute === 'QueueName') return name
    if (t === 'AWS::SQS::Queue' && attribute === 'QueueUrl') return this.ref(logical)
    if (t === 'AWS::DynamoDB::Table' && attribute === 'StreamArn') return `${this.getAtt(logical, 'Arn')}/stream/1970-01-01T00:00:00.000`
    if (t === 'AWS::SNS::Topic' && attribute === 'TopicName') return name
    if (t === 'AWS::Events::EventBus' && attribute === 'Name') return name
    if (t === 'AWS::IAM::Role' && attribute === 'RoleId') return `AROA${suffix(logical)}`
    throw new TemplateError(`Fn::GetAtt ${logical}.${attribute} is not modelled`)
  }

  condition(name) {
    if (!(name in this.conditions)) {
      const def = (this.doc.Conditions ?? {})[name]
      if (def === undefined) throw new TemplateError(`unknown condition ${name}`)
      this.conditions[name] = Boolean(this.resolve(def))
    }
    return this.conditions[name]
  }

  /** Resolves intrinsics; returns NO_VALUE for AWS::NoValue (dropped from lists and objects). */
  resolve(value) {
    if (Array.isArray(value)) {
      return value.map((v) => this.resolve(v)).filter((v) => v !== NO_VALUE)
    }
    if (value === null || typeof value !== 'object') return value
    const keys = Object.keys(value)
    if (keys.length === 1) {
      const [k] = keys
      const arg = value[k]
      switch (k) {
        case 'Ref':
          return arg === 'AWS::NoValue' ? NO_VALUE : this.ref(arg)
        case 'Fn::GetAtt': {
          const [logical, ...rest] = Array.isArray(arg) ? arg : arg.split('.')
          return this.getAtt(logical, this.resolve(rest.join('.')))
        }
        case 'Fn::Sub':
          return this.sub(arg)
        case 'Fn::Join': {
          const [sep, parts] = arg
          return this.resolve(parts).join(sep)
        }
        case 'Fn::Select': {
          const [i, list] = arg
          return this.resolve(list)[Number(this.resolve(i))]
        }
        case 'Fn::Split': {
          const [sep, text] = arg
          return this.resolve(text).split(sep)
        }
        case 'Fn::If': {
          const [cond, yes, no] = arg
          return this.resolve(this.condition(cond) ? yes : no)
        }
        case 'Fn::Equals': {
          const [a, b] = this.resolve(arg)
          return String(a) === String(b)
        }
        case 'Fn::Not':
          return !this.resolve(arg)[0]
        case 'Fn::And':
          return this.resolve(arg).every(Boolean)
        case 'Fn::Or':
          return this.resolve(arg).some(Boolean)
        case 'Condition':
          return this.condition(arg)
        case 'Fn::ImportValue':
        case 'Fn::GetAZs':
        case 'Fn::FindInMap':
        case 'Fn::Base64':
        case 'Fn::Cidr':
          throw new TemplateError(`${k} is not modelled`)
      }
    }
    const out = {}
    for (const [k, v] of Object.entries(value)) {
      const r = this.resolve(v)
      if (r !== NO_VALUE) out[k] = r
    }
    return out
  }

  /** Fn::Sub: `${Param}`, `${AWS::Region}`, `${Logical}`, `${Logical.Attr}`, `${!Literal}`. */
  sub(arg, extra = {}) {
    const [text, vars] = Array.isArray(arg) ? arg : [arg, {}]
    const resolvedVars = { ...extra }
    for (const [k, v] of Object.entries(vars ?? {})) resolvedVars[k] = this.resolve(v)
    return text.replace(/\$\{([^}]*)\}/g, (whole, name) => {
      if (name.startsWith('!')) return '${' + name.slice(1) + '}'
      // IAM policy variables (`${aws:username}`) are not Fn::Sub's.
      if (/^[a-z0-9-]+:/.test(name)) return whole
      if (name in resolvedVars) return String(resolvedVars[name])
      if (name.includes('.') && !name.startsWith('AWS::')) {
        const [logical, ...attr] = name.split('.')
        return this.getAtt(logical, attr.join('.'))
      }
      return String(this.ref(name))
    })
  }

  ofType(type) {
    return Object.keys(this.resources).filter((k) => this.resources[k].Type === type)
  }

  /** The role a function runs with: its Role (GetAtt X.Arn / Ref / ARN), else SAM's `<Function>Role`. */
  functionRole(fn) {
    const r = this.resources[fn]
    if (!r) throw new TemplateError(`no function ${fn} in the template`)
    const role = r.Properties?.Role
    if (role === undefined) {
      if (this.resources[`${fn}Role`]?.Type === 'AWS::IAM::Role') return `${fn}Role`
      throw new TemplateError(`${fn} has no Role and no ${fn}Role`)
    }
    if (role['Fn::GetAtt']) {
      const [logical] = Array.isArray(role['Fn::GetAtt']) ? role['Fn::GetAtt'] : role['Fn::GetAtt'].split('.')
      return logical
    }
    if (role.Ref) return role.Ref
    const text = typeof role === 'string' ? role : this.resolve(role)
    const match = this.ofType('AWS::IAM::Role').find((k) => this.getAtt(k, 'Arn') === text)
    if (match) return match
    throw new TemplateError(`${fn}'s Role ${JSON.stringify(role)} is not a role of this template`)
  }

  /** Identity policies of a role: inline Policies, AWS::IAM::Policy / ManagedPolicy attached to it, and its ManagedPolicyArns. */
  rolePolicies(logical) {
    const role = this.resources[logical]
    if (role?.Type !== 'AWS::IAM::Role') throw new TemplateError(`${logical} is not an AWS::IAM::Role`)
    const p = role.Properties ?? {}
    const policies = []
    for (const [i, pol] of (this.resolve(p.Policies ?? [])).entries()) {
      policies.push({ name: `${logical}/${pol.PolicyName ?? i}`, policy: pol.PolicyDocument })
    }
    for (const [k, r] of Object.entries(this.resources)) {
      if (r.Type !== 'AWS::IAM::Policy' && r.Type !== 'AWS::IAM::ManagedPolicy') continue
      if (r.Condition && !this.condition(r.Condition)) continue
      const roles = r.Properties?.Roles ?? []
      const attached = roles.some((x) => x?.Ref === logical || x === this.physicalName(logical))
      if (attached) policies.push({ name: k, policy: this.resolve(r.Properties.PolicyDocument) })
    }
    const managed = this.resolve(p.ManagedPolicyArns ?? [])
    const boundary = p.PermissionsBoundary === undefined ? undefined : this.resolve(p.PermissionsBoundary)
    return { policies, managed, boundary, reasons: role.Metadata?.UnexercisedReasons ?? {} }
  }
}

export const NO_VALUE = Symbol('AWS::NoValue')
