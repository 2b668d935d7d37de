//! The `hookgate` binary in pipes and terminals: a closed pipe ends it
//! quietly (exit 0), an AWS error is one line and a hint (the whole chain
//! with `--debug`), a `--json` usage error carries clap's message alone, the
//! global options have their own help heading, and colour appears only on a
//! terminal, never with `NO_COLOR`. No AWS is reached: the credentials are
//! missing and the endpoint refuses.

use std::{
    io::{BufRead, BufReader},
    process::{Command, Output, Stdio},
};

/// The binary with an empty environment (no credentials, no profile files).
fn hookgate(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hookgate"));
    cmd.args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env(
            "HOME",
            std::env::temp_dir().join("hookgate-terminal-no-home"),
        )
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_REGION", "us-east-1");
    cmd
}

/// Runs `args` with stdout read for its first line only (as `| head -1`),
/// or closed before anything is written (`| true`); the exit status and
/// stderr.
fn head(args: &[&str], lines: usize) -> (Option<i32>, String) {
    let mut child = hookgate(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut reader = BufReader::new(stdout);
    for _ in 0..lines {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert!(!line.is_empty(), "{args:?} printed nothing");
    }
    drop(reader);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn a_closed_pipe_ends_quietly_with_exit_0() {
    for args in [
        &["completions", "bash"][..],
        &["completions", "zsh"][..],
        &["man"][..],
        &["--help"][..],
        &["triage", "approve", "--help"][..],
    ] {
        for lines in [0, 1] {
            let (code, stderr) = head(args, lines);
            assert_eq!(
                (code, stderr.as_str()),
                (Some(0), ""),
                "hookgate {args:?} | head -{lines}"
            );
        }
    }
}

fn run(args: &[&str]) -> Output {
    hookgate(args).output().unwrap()
}

#[test]
fn an_aws_error_is_one_line_and_a_hint_and_debug_prints_the_chain() {
    let args = [
        "--stack",
        "s1",
        "--endpoint-url",
        "http://127.0.0.1:9",
        "status",
    ];
    let out = run(&args);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(
        lines[0].starts_with("error: --stack s1: cannot describe the stack"),
        "{stderr}"
    );
    assert!(
        lines[0].ends_with("(--debug prints the whole cause chain)"),
        "{stderr}"
    );
    assert!(!stderr.contains("CredentialsNotLoaded"), "{stderr}");
    assert!(
        lines[1].starts_with("hint: the AWS credentials"),
        "{stderr}"
    );
    let mut debug = args.to_vec();
    debug.insert(0, "--debug");
    let out = run(&debug);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr.contains("CredentialsNotLoaded"), "{stderr}");
    assert!(
        stderr.lines().last().unwrap().starts_with("hint: "),
        "{stderr}"
    );
}

#[test]
fn a_json_usage_error_is_the_message_alone() {
    let out = run(&["--json", "triage", "list", "--frob"]);
    assert_eq!(out.status.code(), Some(2));
    let error: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(
        error,
        serde_json::json!({"error": {
            "code": "usage",
            "message": "unexpected argument '--frob' found",
            "hint": null,
        }})
    );
}

#[test]
fn the_global_options_have_their_own_heading() {
    let out = run(&["triage", "approve", "-h"]);
    let help = String::from_utf8(out.stdout).unwrap();
    let (own, global) = help
        .split_once("\nGlobal options:\n")
        .unwrap_or_else(|| panic!("no global heading in {help}"));
    for flag in [
        "--stack",
        "--profile",
        "--region",
        "--endpoint-url",
        "--config",
        "--json",
        "--ops-url",
        "--debug",
    ] {
        assert!(
            !own.contains(&format!(" {flag} ")),
            "{flag} among the command's own: {help}"
        );
        assert!(
            global.contains(&format!(" {flag}")),
            "{flag} not under Global options: {help}"
        );
    }
    for flag in ["--class", "--execute", "--reason"] {
        assert!(own.contains(flag), "{flag}: {help}");
    }
}

/// Runs `hookgate -h` on a terminal (`script`'s pseudo-terminal), with
/// `extra` in the environment; its output.
fn on_a_terminal(extra: &[(&str, &str)]) -> String {
    let line = format!("{} -h", env!("CARGO_BIN_EXE_hookgate"));
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("TERM", "xterm");
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into()
}

#[test]
fn colour_only_on_a_terminal_and_never_with_no_color() {
    const ESC: char = '\u{1b}';
    assert!(on_a_terminal(&[]).contains(ESC), "no colour on a terminal");
    let plain = on_a_terminal(&[("NO_COLOR", "1")]);
    assert!(
        plain.contains("Usage:") && !plain.contains(ESC),
        "{plain:?}"
    );
    let piped = String::from_utf8(run(&["-h"]).stdout).unwrap();
    assert!(
        piped.contains("Usage:") && !piped.contains(ESC),
        "{piped:?}"
    );
    // An error on a terminal too.
    let out = run(&["triage", "list", "--frob"]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains(ESC));
}
