//! The command line, declared once: `main.rs` parses and dispatches it,
//! `hookgate completions` and `hookgate man` render it, and the tests hold
//! every command and flag to having help (and every command an example).

use std::{ffi::OsStr, path::PathBuf};

use clap::{
    Arg, Args, Parser, Subcommand,
    builder::{PossibleValue, PossibleValuesParser, TypedValueParser},
};
use hookgate_core::{
    Provider,
    ledger::ActionStatus,
    triage::{TriageClass, TriageStatus},
};

use crate::ops::parse_age;

const EXIT_CODES: &str = "\
Exit codes: 0 done; 1 failed (a store or AWS call failed, a decision was refused);
2 usage (a flag or value this help does not allow); 3 nothing matched.
With --json, an error is one JSON object on stderr: {\"error\":{\"code\":…,\"message\":…}}.";

/// The whole command line: the global options, then one command.
#[derive(Debug, Parser)]
#[command(
    name = "hookgate",
    version,
    about = "Operate hookgate: webhooks in, business actions once.",
    after_help = EXIT_CODES,
    after_long_help = format!("Examples:\n  hookgate --stack hookgate-prod status\n  hookgate --stack hookgate-prod triage list --status held\n\n{EXIT_CODES}"),
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// The options every command takes, as the AWS CLI spells them; `-h`
/// lists them under their own heading, after the command's own.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// The deployed stack's CloudFormation name: its outputs and parameters
    /// give the tables, queues, log groups, alarm prefix and webhook URL
    /// (HOOKGATE_* variables that disagree are ignored, with a warning).
    #[arg(long, global = true, env = "HOOKGATE_STACK", value_name = "NAME")]
    pub stack: Option<String>,
    /// The AWS profile for credentials and region (default: $AWS_PROFILE,
    /// then the default chain).
    #[arg(long, global = true, value_name = "NAME")]
    pub profile: Option<String>,
    /// The AWS Region (default: $AWS_REGION, then the profile's).
    #[arg(long, global = true, value_name = "REGION")]
    pub region: Option<String>,
    /// Send every AWS call to this endpoint (e.g. the local emulator,
    /// http://127.0.0.1:4566; default: $AWS_ENDPOINT_URL).
    #[arg(long, global = true, value_name = "URL")]
    pub endpoint_url: Option<String>,
    /// A configuration file (default: $HOOKGATE_CONFIG) instead of the one
    /// the stack was deployed with, which --stack brings: the rules a
    /// dry-run plan applies, the providers' windows `doctor` checks, the
    /// secrets `send` signs with. Needed only to check a file before
    /// deploying it (`check-config`), or without --stack; with --stack, the
    /// tables and queues still come from the stack.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print JSON instead of a table (errors: JSON on stderr).
    #[arg(long, global = true)]
    pub json: bool,
    /// On failure, print the error's whole cause chain (the AWS SDK's
    /// details), not its first line.
    #[arg(long, global = true)]
    pub debug: bool,
    /// The ops API every decision goes through, without --stack (with it,
    /// the stack's `OpsApiUrl` output; another URL is refused). Requests are
    /// signed with SigV4 under your credentials; the API records your IAM
    /// identity with each decision.
    #[arg(long, global = true, env = "HOOKGATE_OPS_URL", value_name = "URL")]
    pub ops_url: Option<String>,
}

/// The commands, one variant each (`hookgate-dev` has the development ones).
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the headers a provider would send with a body, and a curl line.
    #[command(
        after_help = "Example:\n  hookgate sign --provider retell --secret env:RETELL_KEY --body body.json --url http://127.0.0.1:8787/webhooks/retell/ws-42"
    )]
    Sign(Box<crate::sign::Args>),
    /// Sign a webhook as its provider would and post it: to --url, or to the
    /// stack's webhook URL; prints the answer's status and verdict.
    #[command(
        after_help = "Examples:\n  hookgate --stack hookgate-prod send --provider retell --workspace ws-42 --secret env:RETELL_KEY --body body.json\n  hookgate --stack hookgate-prod send --provider retell --workspace ws-42 --secret env:RETELL_KEY --event events/apigw-v2-retell-call-ended.json"
    )]
    Send(Box<crate::send::Args>),
    /// The resolved stack, Region, account and caller identity, the
    /// stack's outputs and its dashboard's URL.
    #[command(after_help = "Example:\n  hookgate --stack hookgate-prod --profile prod status")]
    Status,
    /// The functions' log lines from CloudWatch Logs: one event's across
    /// every function (--correlation), or the latest; --tail follows.
    #[command(
        after_help = "Examples:\n  hookgate --stack hookgate-prod logs --correlation call_analyzed:c-123\n  hookgate --stack hookgate-prod logs --function action --since 10m --tail"
    )]
    Logs(crate::logs::Args),
    /// Validate a config as the functions will load it (HOOKGATE_* variables
    /// override the file): inbox TTL vs re-delivery windows, rules,
    /// destinations, secret references. `make deploy` runs it first.
    #[command(
        after_help = "Examples:\n  hookgate check-config --config hookgate.toml\n  hookgate check-config --config config/deploy.example.toml --deploy HOOKGATE_SERVICE --stack-name hookgate --account 111122223333 --region eu-west-1"
    )]
    CheckConfig {
        /// Also refuse what would fail in Lambda: secret references the
        /// deployed roles cannot read (`env:` variables other than these,
        /// SSM outside /hookgate/<stack>/, Secrets Manager outside
        /// hookgate/<stack>/),
        /// loopback destinations, the placeholder account. The value lists
        /// the variables the template sets, comma-separated; --region is the
        /// Region it deploys to.
        #[arg(long, value_name = "TEMPLATE_ENV", requires = "stack_name")]
        deploy: Option<String>,
        /// With --deploy: the stack's name. Its functions read only the
        /// secrets under /hookgate/<stack>/ (SSM) and hookgate/<stack>/
        /// (Secrets Manager).
        #[arg(long, requires = "deploy", value_name = "STACK")]
        stack_name: Option<String>,
        /// With --deploy: a stack parameter as it will be deployed
        /// (`EventSource=aws.connect`); repeatable. EventSource and
        /// EventDetailType are checked against the config's EventBridge
        /// sources, both ways.
        #[arg(long = "param", value_name = "NAME=VALUE", requires = "deploy")]
        params: Vec<String>,
        /// With --deploy: the account the stack deploys to (Secrets Manager
        /// ARNs of another are refused).
        #[arg(long, requires = "deploy", value_name = "ACCOUNT")]
        account: Option<String>,
    },
    /// Look up an inbox record.
    #[command(
        after_help = "Examples:\n  hookgate --stack hookgate-prod inbox show ws-42 retell call_analyzed:c-123\n  hookgate --stack hookgate-prod inbox show 'ws-42#retell#call_analyzed:c-123'"
    )]
    Inbox {
        #[command(subcommand)]
        command: InboxCommand,
    },
    /// Business actions in the ledger.
    #[command(
        after_help = "Example:\n  hookgate --stack hookgate-prod actions list --status uncertain"
    )]
    Actions {
        #[command(subcommand)]
        command: ActionsCommand,
    },
    /// Held failures and the decisions on them.
    #[command(
        after_help = "Example:\n  hookgate --stack hookgate-prod triage list --status held --class downstream-outage"
    )]
    Triage {
        #[command(subcommand)]
        command: TriageCommand,
    },
    /// Check the deployed stack: TTL vs re-delivery windows, TTL enabled,
    /// redrive, visibility timeout; with --stack, its alarms.
    #[command(after_help = "Example:\n  hookgate --stack hookgate-prod doctor")]
    Doctor {
        /// The EventBridge rule whose target is the ingress.
        #[arg(long, value_name = "NAME")]
        rule: Option<String>,
        /// The rule's event bus.
        #[arg(long, default_value = "default", value_name = "NAME")]
        bus: String,
        /// The deployed ingress function (its async MaximumEventAge is read);
        /// the stack's IngressFunctionName output.
        #[arg(long, requires = "action_function", value_name = "NAME")]
        ingress_function: Option<String>,
        /// The deployed action function (its timeout is read); the stack's
        /// ActionFunctionName output.
        #[arg(long, requires = "ingress_function", value_name = "NAME")]
        action_function: Option<String>,
    },
    /// A local web page over these operations (127.0.0.1 only): what is
    /// held, the approval plans, decisions, actions, event lookup, doctor.
    /// Decisions are recorded with your STS identity, as from the CLI.
    #[command(after_help = "Example:\n  hookgate --stack hookgate-prod console")]
    Console {
        /// The port on 127.0.0.1 (0: any free one).
        #[arg(long, default_value_t = 8790)]
        port: u16,
        /// Approvals per second at most, when a plan is carried out.
        #[arg(long, default_value_t = 10, value_name = "N")]
        rate: u32,
    },
    /// Deliveries, duplicates, collisions, triage by class, open actions.
    #[command(after_help = "Example:\n  hookgate --stack hookgate-prod stats --since 24h")]
    Stats {
        /// How far back (s, m, h, d).
        #[arg(long, default_value = "7d", value_parser = parse_age, value_name = "AGE")]
        since: std::time::Duration,
    },
    /// Print a shell completion script.
    #[command(
        after_help = "Example:\n  mkdir -p ~/.local/share/bash-completion/completions && hookgate completions bash > ~/.local/share/bash-completion/completions/hookgate"
    )]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), or write one page per command.
    #[command(
        after_help = "Examples:\n  hookgate man > hookgate.1\n  hookgate man --dir ~/.local/share/man/man1"
    )]
    Man {
        /// Write hookgate.1 and a page per command (hookgate-triage-list.1,
        /// …) into this directory instead.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// `hookgate inbox`'s subcommands.
#[derive(Debug, Subcommand)]
pub enum InboxCommand {
    /// `inbox show <workspace> <provider> <event-key>`, or the full inbox key.
    #[command(
        after_help = "Example:\n  hookgate --stack hookgate-prod inbox show ws-42 retell call_analyzed:c-123"
    )]
    Show {
        /// The workspace, provider and event key (or the key `ws#provider#event`).
        #[arg(required = true, value_name = "PART")]
        parts: Vec<String>,
    },
}

/// `hookgate actions`' subcommands.
#[derive(Debug, Subcommand)]
pub enum ActionsCommand {
    /// Actions that are not COMPLETED, by status.
    #[command(
        after_help = "Example:\n  hookgate --stack hookgate-prod actions list --status uncertain --older-than 1h"
    )]
    List {
        /// The status to list.
        #[arg(long, value_parser = named(ActionStatus::ALL, |s| s.as_str()), ignore_case = true)]
        status: ActionStatus,
        /// Only actions older than this (s, m, h, d).
        #[arg(long, value_parser = parse_age, value_name = "AGE")]
        older_than: Option<std::time::Duration>,
        /// A page of at most N actions (1 to 1000, oldest first), and the
        /// token of the next page.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1000))]
        limit: Option<u16>,
        /// The page after the one that printed this token (with --limit).
        #[arg(long, value_name = "TOKEN", requires = "limit")]
        next: Option<String>,
    },
    /// One action's ledger record.
    #[command(
        after_help = "Example:\n  hookgate --stack hookgate-prod actions show 'ws-42#create_followup_task#cb-123'"
    )]
    Show {
        /// The action's key.
        key: String,
    },
    /// Resolve an UNCERTAIN action with what you found at the destination.
    #[command(
        after_help = "Examples:\n  hookgate --stack hookgate-prod actions reconcile KEY --found task_81\n  hookgate --stack hookgate-prod actions reconcile KEY --not-found"
    )]
    Reconcile {
        /// The action's key.
        key: String,
        /// The destination's id of the effect you found.
        #[arg(
            long,
            conflicts_with = "not_found",
            required_unless_present = "not_found",
            value_name = "ID"
        )]
        found: Option<String>,
        /// Nothing was created: perform it again (re-queued once).
        #[arg(long)]
        not_found: bool,
    },
}

/// `hookgate triage`'s subcommands.
#[derive(Debug, Subcommand)]
pub enum TriageCommand {
    /// Items by status (HELD by default), oldest first.
    #[command(
        after_help = "Example:\n  hookgate --stack hookgate-prod triage list --status held --class downstream-outage"
    )]
    List {
        /// Only items of this class.
        #[arg(long, value_parser = named(TriageClass::ALL, |c| c.as_str()), ignore_case = true)]
        class: Option<TriageClass>,
        /// The items' status.
        #[arg(long, default_value = "HELD", value_parser = named(TriageStatus::ALL, |s| s.as_str()), ignore_case = true)]
        status: TriageStatus,
        /// A page of at most N items (1 to 1000, oldest first), and the token
        /// of the next page.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1000))]
        limit: Option<u16>,
        /// The page after the one that printed this token (with --limit).
        #[arg(long, value_name = "TOKEN", requires = "limit")]
        next: Option<String>,
    },
    /// One item: its facts, what an approval would do, the evidence.
    #[command(after_help = "Example:\n  hookgate --stack hookgate-prod triage show ID")]
    Show {
        /// The item's id.
        id: String,
    },
    /// Approve items by id, or in bulk by class / destination / workspace /
    /// age: a dry run (what each approval would re-inject) unless
    /// --execute, by id as in bulk. A bulk approval is carried out only as
    /// the plan its dry run wrote (--plan-out, then --execute --plan);
    /// collisions and poison only by id.
    #[command(
        after_help = "Examples:\n  hookgate --stack hookgate-prod triage approve --class downstream-outage --since 2h --plan-out plan.json --reason 'CRM back'\n  hookgate --stack hookgate-prod triage approve --execute --plan plan.json\n  hookgate --stack hookgate-prod triage approve ID --reason 'checked the CRM'\n  hookgate --stack hookgate-prod triage approve ID --execute --reason 'checked the CRM'"
    )]
    Approve {
        /// Item ids to approve.
        ids: Vec<String>,
        /// Bulk: the items of this class.
        #[arg(long, value_parser = named(TriageClass::ALL, |c| c.as_str()), ignore_case = true)]
        class: Option<TriageClass>,
        /// Bulk: the items whose actions go to this destination.
        #[arg(long, value_name = "NAME")]
        destination: Option<String>,
        /// Bulk: the items of this workspace.
        #[arg(long, value_name = "WORKSPACE")]
        workspace: Option<String>,
        /// Bulk: the items first seen within this age (s, m, h, d).
        #[arg(long, value_parser = parse_age, value_name = "AGE")]
        since: Option<std::time::Duration>,
        /// Show what would be re-injected and each action's ledger state
        /// (the default without --execute).
        #[arg(long, conflicts_with = "execute")]
        dry_run: bool,
        /// Carry out the approval (without it: a dry run). A bulk approval
        /// runs only a plan its dry run wrote (`--plan FILE`).
        #[arg(long)]
        execute: bool,
        /// With a dry run: write the items it shows as a plan.
        #[arg(long, value_name = "FILE")]
        plan_out: Option<PathBuf>,
        /// With --execute: approve exactly the plan's items.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["ids", "class", "destination", "workspace", "since"])]
        plan: Option<PathBuf>,
        /// Why: recorded with the decision. With --plan, the plan's reason
        /// (give none, or the same).
        #[arg(long, required_unless_present = "plan")]
        reason: Option<String>,
        /// Approvals per second at most.
        #[arg(long, default_value_t = 10, value_name = "N")]
        rate: u32,
    },
    /// Reject an item for good (final), with a reason.
    #[command(
        after_help = "Example:\n  hookgate --stack hookgate-prod triage reject ID --reason 'duplicate of task_81'"
    )]
    Reject {
        /// The item's id.
        id: String,
        /// Why: recorded with the decision.
        #[arg(long)]
        reason: String,
    },
}

/// A value parser for an enum stored by name (`names!` in the core): the
/// names are listed in `--help` and completions, and taken in any case, with
/// `-` for `_`.
pub fn named<T: Copy + Send + Sync + 'static>(
    all: &'static [T],
    name: fn(&T) -> &'static str,
) -> Named<T> {
    Named { all, name }
}

/// [`named`]'s parser: one of `all`, by the name `name` gives it.
#[derive(Debug, Clone)]
pub struct Named<T: 'static> {
    all: &'static [T],
    name: fn(&T) -> &'static str,
}

impl<T: Copy + Send + Sync + 'static> TypedValueParser for Named<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        let wanted = normal(&value.to_string_lossy());
        if let Some(v) = self.all.iter().find(|v| normal((self.name)(v)) == wanted) {
            return Ok(*v);
        }
        // clap's own message, with the accepted values: the value is none of
        // them, so the parser refuses it (never a value taken by default).
        match PossibleValuesParser::new(self.all.iter().map(|v| (self.name)(v)))
            .parse_ref(cmd, arg, value)
        {
            Err(e) => Err(e),
            Ok(_) => Err(clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                format!("invalid value {value:?}"),
            )),
        }
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            self.all.iter().map(|v| PossibleValue::new((self.name)(v))),
        ))
    }
}

/// A name as compared: any case, `-` and `_` alike.
fn normal(name: &str) -> String {
    name.to_ascii_lowercase().replace('-', "_")
}

/// `--provider`'s parser.
pub fn provider() -> Named<Provider> {
    named(&Provider::ALL, |p| p.as_str())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn every_command_and_flag_has_help_and_every_command_an_example() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            let path = format!("{path} {}", cmd.get_name());
            if cmd.get_about().is_none() && path != "hookgate" {
                missing.push(format!("{path}: no help"));
            }
            let leaf = !cmd.has_subcommands();
            let example = cmd
                .get_after_help()
                .map(|h| h.to_string().contains("Example"))
                .unwrap_or(false);
            if leaf && !example && cmd.get_name() != "help" {
                missing.push(format!("{path}: no example"));
            }
            for arg in cmd.get_arguments() {
                if arg.get_help().is_none() && !["help", "version"].contains(&arg.get_id().as_str())
                {
                    missing.push(format!("{path} --{}: no help", arg.get_id()));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &path, missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "", &mut missing);
        assert_eq!(missing, Vec::<String>::new());
    }

    /// Each example line's `hookgate` words, split as a shell would
    /// (single quotes; a redirection or `&&` ends them).
    fn example_argv(line: &str) -> Vec<String> {
        let line = line.rsplit("&& ").next().unwrap_or(line);
        let (mut words, mut word, mut quoted) = (Vec::new(), String::new(), false);
        for c in line.chars() {
            match c {
                '\'' => quoted = !quoted,
                ' ' if !quoted => words.push(std::mem::take(&mut word)),
                c => word.push(c),
            }
        }
        words.push(word);
        words.retain(|w| !w.is_empty());
        if let Some(at) = words.iter().position(|w| w == ">") {
            words.truncate(at);
        }
        words
    }

    /// Every help example parses as written (`make local-smoke` also runs
    /// each against the local stack: scripts/help_examples.py), and its
    /// only placeholders are ID and KEY, the ids it substitutes.
    #[test]
    fn every_example_parses_as_written() {
        fn walk(cmd: &clap::Command, path: &str, lines: &mut Vec<String>) {
            let path = format!("{path} {}", cmd.get_name());
            let help = cmd
                .get_after_long_help()
                .or(cmd.get_after_help())
                .map(ToString::to_string)
                .unwrap_or_default();
            lines.extend(
                help.lines()
                    .skip_while(|l| !l.starts_with("Example"))
                    .skip(1)
                    .take_while(|l| l.starts_with("  "))
                    .map(|l| l.trim().to_owned()),
            );
            for sub in cmd.get_subcommands() {
                walk(sub, &path, lines);
            }
        }
        let mut lines = Vec::new();
        walk(&Cli::command(), "", &mut lines);
        assert!(lines.len() >= 30, "{lines:#?}");
        for line in &lines {
            let argv = example_argv(line);
            assert_eq!(argv[0], "hookgate", "{line}");
            if let Err(e) = Cli::try_parse_from(&argv) {
                panic!("{line}: {e}");
            }
            assert!(
                !line.contains('…') && !line.contains("01JD") && !line.contains("crm."),
                "{line}: a shape that never occurs"
            );
        }
    }

    #[test]
    fn statuses_and_classes_are_taken_in_any_case_and_listed() {
        let cli = Cli::try_parse_from(["hookgate", "triage", "list", "--status", "held"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Triage {
                command: TriageCommand::List {
                    status: TriageStatus::Held,
                    ..
                }
            }
        ));
        let cli =
            Cli::try_parse_from(["hookgate", "actions", "list", "--status", "Uncertain"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Actions {
                command: ActionsCommand::List {
                    status: ActionStatus::Uncertain,
                    ..
                }
            }
        ));
        let err = Cli::try_parse_from(["hookgate", "triage", "list", "--status", "heldd"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("possible values: HELD"), "{err}");
        let help = Cli::command()
            .find_subcommand_mut("triage")
            .unwrap()
            .find_subcommand_mut("list")
            .unwrap()
            .render_long_help()
            .to_string();
        for class in TriageClass::ALL {
            assert!(help.contains(class.as_str()), "{class} not in {help}");
        }
    }

    /// Every value of every enum parses to itself, in any case and with `-`
    /// or `_`; a value that is none of them is refused.
    #[test]
    fn every_listed_value_parses_to_itself_and_no_other() {
        fn check<T: Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static>(
            parser: Named<T>,
            all: &[T],
            name: fn(&T) -> &'static str,
        ) {
            let cmd = clap::Command::new("t");
            for v in all {
                let text = name(v);
                for written in [
                    text.to_owned(),
                    text.to_ascii_uppercase(),
                    text.to_ascii_lowercase(),
                    text.replace('-', "_"),
                    text.replace('_', "-"),
                ] {
                    let got = parser.parse_ref(&cmd, None, OsStr::new(&written)).unwrap();
                    assert_eq!(got, *v, "{written}");
                }
            }
            assert!(parser.parse_ref(&cmd, None, OsStr::new("nope")).is_err());
            // No two values are one when written loosely.
            let mut names: Vec<String> = all.iter().map(|v| normal(name(v))).collect();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), all.len());
        }
        check(
            named(TriageClass::ALL, |c| c.as_str()),
            TriageClass::ALL,
            |c| c.as_str(),
        );
        check(
            named(TriageStatus::ALL, |s| s.as_str()),
            TriageStatus::ALL,
            |s| s.as_str(),
        );
        check(
            named(ActionStatus::ALL, |s| s.as_str()),
            ActionStatus::ALL,
            |s| s.as_str(),
        );
        check(provider(), &Provider::ALL, |p| p.as_str());
    }

    #[test]
    fn the_global_flags_go_before_or_after_the_command() {
        for argv in [
            &[
                "hookgate",
                "--stack",
                "s1",
                "--region",
                "eu-west-1",
                "stats",
            ][..],
            &[
                "hookgate",
                "stats",
                "--stack",
                "s1",
                "--region",
                "eu-west-1",
            ][..],
        ] {
            let cli = Cli::try_parse_from(argv).unwrap();
            assert_eq!(cli.global.stack.as_deref(), Some("s1"));
            assert_eq!(cli.global.region.as_deref(), Some("eu-west-1"));
        }
    }
}
