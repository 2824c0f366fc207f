//! The `better-compute fleet` commands that need no server, run as a user runs them: the real
//! binary, real files, output compared as expected text.

mod common;

use common::{seed_before_review, seed_reviewed};
use planner::fleet::{Fleet, Modules};
use planner::{Document, Plan, PlanOptions};
use serde_json::{Value, json};
use std::io::Write as _;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

/// What a run of the binary did.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// A scratch folder with the binary run inside it, isolated from the user's configuration.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        Sandbox {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, value: &Value) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, serde_json::to_string_pretty(value).unwrap()).unwrap();
        path
    }

    /// Runs `better-compute <args>` with `vars` as the only `BETTER_COMPUTE_*` variables
    /// and a HOME without a configuration file.
    fn run(&self, args: &[&str], vars: &[(&str, &str)]) -> Run {
        self.run_with(args, vars, |_| {})
    }

    /// Like [`Sandbox::run`], letting `configure` change the command (its standard streams).
    fn run_with(
        &self,
        args: &[&str],
        vars: &[(&str, &str)],
        configure: impl FnOnce(&mut Command),
    ) -> Run {
        let mut command = Command::new(env!("CARGO_BIN_EXE_better-compute"));
        command.args(args).current_dir(self.dir.path());
        for (name, _) in std::env::vars() {
            if name.starts_with("BETTER_COMPUTE_")
                || name == "NO_COLOR"
                || name == "CLICOLOR_FORCE"
                || name == "XDG_CONFIG_HOME"
            {
                command.env_remove(name);
            }
        }
        command.env("HOME", self.dir.path());
        command.envs(vars.iter().copied());
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        configure(&mut command);
        let output = command
            .spawn()
            .and_then(|child| child.wait_with_output())
            .expect("running better-compute");
        Run {
            code: output.status.code().expect("exited, not killed"),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }
}

/// Standard output that every write fails on with "no space left on device".
fn full_disk() -> Stdio {
    Stdio::from(std::fs::File::create("/dev/full").expect("/dev/full"))
}

/// A stand-in server on loopback for what a real one does only by accident (a connection that
/// drops after the request, a server of another version): it reads each request whole, then
/// answers what `answer` gives for its path (status and JSON body), or closes the connection
/// when that is `None`.
struct Stub {
    url: String,
    /// The path of each request read, in order.
    paths: Arc<Mutex<Vec<String>>>,
}

impl Stub {
    fn start(answer: impl Fn(&str) -> Option<(u16, Value)> + Send + 'static) -> Stub {
        Stub::raw(move |path| {
            let (status, body) = answer(path)?;
            Some((
                status,
                "content-type: application/json\r\n".into(),
                body.to_string(),
            ))
        })
    }

    /// A stub that answers a status, header lines (each ending in CRLF) and a body as given.
    fn raw(answer: impl Fn(&str) -> Option<(u16, String, String)> + Send + 'static) -> Stub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let paths = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&paths);
        // Serves until the test process ends.
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let Some(path) = read_request(&mut stream) else {
                    continue;
                };
                let reply = answer(&path);
                seen.lock().unwrap().push(path);
                if let Some((status, headers, body)) = reply {
                    let _ = write!(
                        stream,
                        "HTTP/1.1 {status} X\r\n{headers}\
                         content-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                }
            }
        });
        Stub { url, paths }
    }
}

/// Reads one HTTP request whole and answers its path.
fn read_request(stream: &mut TcpStream) -> Option<String> {
    let data = common::read_http_message(stream)?;
    let line = data.split(|b| *b == b'\n').next()?;
    String::from_utf8_lossy(line)
        .split(' ')
        .nth(1)
        .map(str::to_owned)
}

/// The export of a fleet built from `document` (what `fleet export --state` writes).
fn export_of(document: &Value) -> Value {
    let document = Document::from_value(document).unwrap();
    let fleet = Fleet::from_document(
        "root",
        "usr_ops",
        Modules::default(),
        ["acme".to_owned(), "globex".to_owned()],
        &document,
    )
    .unwrap();
    serde_json::to_value(fleet.export()).unwrap()
}

fn planned(document: &Value, export: &Value, prune: bool) -> Plan {
    let document = document.to_string();
    let document = planner::validate(document.as_bytes()).unwrap();
    let export = planner::Export::from_value(export).unwrap();
    planner::plan(&document, &export, PlanOptions { prune })
}

#[test]
fn plan_against_a_saved_export_prints_the_seeds_lines() {
    let sandbox = Sandbox::new();
    let export = export_of(&seed_before_review());
    sandbox.write("export.json", &export);
    sandbox.write("fleet.json", &seed_reviewed());
    let expected = planned(&seed_reviewed(), &export, false);

    let run = sandbox.run(
        &["fleet", "plan", "fleet.json", "--state", "export.json"],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        format!(
            "~ pool vps-fra (policy)\n\
             ~ ownerQuota vps-fra:gpu (max)\n\
             + offer vps-fra -> globex\n\
             + flavor vps-fra/g1.large\n\
             2 to create, 2 to update, 0 to delete, 5 unchanged.\n\
             planHash: {}\n",
            expected.plan_hash
        )
    );
    assert_eq!(run.stderr, "");

    // --calls lists each call with its canonical input, between the counts and the hash.
    let run = sandbox.run(
        &[
            "fleet",
            "plan",
            "fleet.json",
            "--state",
            "export.json",
            "--calls",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines[4],
        "2 to create, 2 to update, 0 to delete, 5 unchanged."
    );
    assert_eq!(lines[5], format!("Calls ({}):", expected.calls.len()));
    for (line, call) in lines[6..].iter().zip(&expected.calls) {
        let input = serde_json::to_value(call).unwrap()["input"].clone();
        assert_eq!(
            *line,
            format!("  {} {}", call.method(), planner::canonicalize(&input))
        );
    }
    assert_eq!(lines.len(), 6 + expected.calls.len() + 1);
    assert_eq!(
        lines.last().unwrap(),
        &format!("planHash: {}", expected.plan_hash)
    );
    assert!(lines[6].starts_with("  pool.update {"), "{}", run.stdout);

    // --diff shows each update's values under its line: now, then in the document.
    let run = sandbox.run(
        &[
            "fleet",
            "plan",
            "fleet.json",
            "--state",
            "export.json",
            "--diff",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        format!(
            "~ pool vps-fra (policy)\n    \
             policy: {{\"disruptionBudget\":0.2}} -> {{\"disruptionBudget\":0.1}}\n\
             ~ ownerQuota vps-fra:gpu (max)\n    \
             max: 4 -> 8\n\
             + offer vps-fra -> globex\n\
             + flavor vps-fra/g1.large\n\
             2 to create, 2 to update, 0 to delete, 5 unchanged.\n\
             planHash: {}\n",
            expected.plan_hash
        )
    );
}

#[test]
fn plan_output_json_is_the_plan() {
    let sandbox = Sandbox::new();
    let export = export_of(&seed_before_review());
    sandbox.write("export.json", &export);
    sandbox.write("fleet.json", &seed_reviewed());
    let run = sandbox.run(
        &[
            "fleet",
            "plan",
            "fleet.json",
            "--state",
            "export.json",
            "--output",
            "json",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let plan: Plan = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(plan, planned(&seed_reviewed(), &export, false));
    let raw: Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(raw["planHash"].is_string() && raw["summary"]["create"] == 2);
}

#[test]
fn fail_on_drift_fails_only_when_calls_would_run() {
    let sandbox = Sandbox::new();
    sandbox.write("export.json", &export_of(&seed_before_review()));
    sandbox.write("fleet.json", &seed_reviewed());
    sandbox.write("same.json", &seed_before_review());

    let run = sandbox.run(
        &[
            "fleet",
            "plan",
            "fleet.json",
            "--state",
            "export.json",
            "--fail-on-drift",
        ],
        &[],
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.contains("+ flavor vps-fra/g1.large\n"),
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stderr,
        "error: FLEET_DRIFTED: 4 calls would run: the fleet does not match fleet.json\n"
    );

    let run = sandbox.run(
        &[
            "fleet",
            "plan",
            "same.json",
            "--state",
            "export.json",
            "--fail-on-drift",
            "--prune",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "0 to create, 0 to update, 0 to delete, 7 unchanged."
    );
    assert!(lines[1].starts_with("planHash: "));
    assert_eq!(lines.len(), 2);
}

#[test]
fn prune_plans_deletes() {
    let sandbox = Sandbox::new();
    sandbox.write("export.json", &export_of(&seed_before_review()));
    let mut doc = seed_before_review();
    doc["flavors"] = json!([]);
    sandbox.write("fleet.json", &doc);
    let run = sandbox.run(
        &[
            "fleet",
            "plan",
            "fleet.json",
            "--state",
            "export.json",
            "--prune",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with(
            "- flavor vps-fra/g1.small\n0 to create, 0 to update, 1 to delete, 6 unchanged.\n"
        ),
        "{}",
        run.stdout
    );
    // Without prune nothing is deleted.
    let run = sandbox.run(
        &["fleet", "plan", "fleet.json", "--state", "export.json"],
        &[],
    );
    assert!(
        run.stdout
            .starts_with("0 to create, 0 to update, 0 to delete, 6 unchanged.\n")
    );
}

#[test]
fn a_blocked_plan_exits_plan_blocked() {
    let sandbox = Sandbox::new();
    sandbox.write("export.json", &export_of(&seed_before_review()));
    let mut doc = seed_before_review();
    doc["pools"][0]["gpuModel"] = json!("H100");
    sandbox.write("fleet.json", &doc);
    let run = sandbox.run(
        &["fleet", "plan", "fleet.json", "--state", "export.json"],
        &[],
    );
    assert_eq!(run.code, 1);
    let first = run.stdout.lines().next().unwrap();
    assert!(
        first.starts_with("! ~ pool vps-fra (gpuModel) (blocked: ")
            && first.contains("gpuModel cannot change"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.lines().last().unwrap().starts_with("planHash: "));
    assert_eq!(
        run.stderr,
        "error: PLAN_BLOCKED: the plan is blocked: 1 change cannot be applied (marked !); fix the document\n"
    );
    // As JSON the plan has no `!`: the same line without saying so.
    let run = sandbox.run(
        &[
            "fleet",
            "plan",
            "fleet.json",
            "--state",
            "export.json",
            "--output",
            "json",
        ],
        &[],
    );
    assert_eq!(run.code, 1);
    let plan: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(plan["summary"]["blocked"], true, "{plan}");
    assert_eq!(
        run.stderr,
        "error: PLAN_BLOCKED: the plan is blocked: 1 change cannot be applied; fix the document\n"
    );
}

#[test]
fn validate_prints_every_problem_with_its_path() {
    let sandbox = Sandbox::new();
    sandbox.write("fleet.json", &seed_reviewed());
    let run = sandbox.run(&["fleet", "validate", "fleet.json"], &[]);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (0, "fleet.json: valid\n", "")
    );

    let bad = json!({
        "version": 2,
        "sites": [{ "name": "Fra!", "kind": "shared", "region": "eu-central" }],
        "pools": [{
            "name": "vps-fra", "site": "fra", "class": "vps-host",
            "offers": [
                { "tenant": "acme", "quota": { "vcpu": 1 } },
                { "tenant": "globex", "quota": { "vcpu": -1 } }
            ]
        }]
    });
    sandbox.write("bad.json", &bad);
    let run = sandbox.run(&["fleet", "validate", "bad.json"], &[]);
    assert_eq!(run.code, 1);
    assert_eq!(run.stdout, "");
    let lines: Vec<&str> = run.stderr.lines().collect();
    for path in ["version", "sites[0].name", "pools[0].offers[1].quota.vcpu"] {
        let part = format!(": {path}: ");
        assert!(
            lines
                .iter()
                .any(|line| line.starts_with("bad.json:") && line.contains(&part)),
            "no line of bad.json has {part:?}:\n{}",
            run.stderr
        );
    }
    // Like a compiler's: FILE:LINE:COLUMN of the value the path names, for editors to jump to.
    let text = std::fs::read_to_string(sandbox.path("bad.json")).unwrap();
    let (index, line) = text
        .lines()
        .enumerate()
        .find(|(_, line)| line.contains("\"vcpu\": -1"))
        .unwrap();
    let column = line.find("-1").unwrap() + 1;
    let expected = format!(
        "bad.json:{}:{column}: pools[0].offers[1].quota.vcpu: must be an integer",
        index + 1
    );
    assert!(
        lines.iter().any(|line| line.starts_with(&expected)),
        "no line starts with {expected:?}:\n{}",
        run.stderr
    );
    let last = lines.last().unwrap();
    assert!(
        last.starts_with("error: INVALID_INPUT: bad.json does not validate (")
            && last.ends_with(" problems)"),
        "{last}"
    );

    // plan validates before anything else: no server, no state needed to see the problems.
    let run = sandbox.run(&["fleet", "plan", "bad.json", "--tenant", "root"], &[]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains(": pools[0].offers[1].quota.vcpu: "),
        "{}",
        run.stderr
    );

    // Several files: each is reported, the exit says how many failed.
    let run = sandbox.run(&["fleet", "validate", "fleet.json", "bad.json"], &[]);
    assert_eq!(run.code, 1);
    assert_eq!(run.stdout, "fleet.json: valid\n");
    assert!(
        run.stderr
            .ends_with("error: INVALID_INPUT: 1 of 2 files do not validate\n"),
        "{}",
        run.stderr
    );

    std::fs::write(sandbox.path("broken.json"), "{\"version\": 1,").unwrap();
    let run = sandbox.run(&["fleet", "validate", "broken.json"], &[]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .starts_with("broken.json:1:14: the document is not valid JSON: "),
        "{}",
        run.stderr
    );

    let run = sandbox.run(&["fleet", "validate", "absent.json"], &[]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.starts_with("error: cannot read absent.json: "),
        "{}",
        run.stderr
    );
    // A file it cannot read does not stop the others from being checked.
    let run = sandbox.run(
        &["fleet", "validate", "absent.json", "bad.json", "fleet.json"],
        &[],
    );
    assert_eq!(run.code, 1);
    assert_eq!(run.stdout, "fleet.json: valid\n");
    assert!(
        run.stderr.starts_with("cannot read absent.json: "),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(": pools[0].offers[1].quota.vcpu: "),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .ends_with("error: INVALID_INPUT: 2 of 3 files do not validate\n"),
        "{}",
        run.stderr
    );
}

#[test]
fn usage_errors_exit_2() {
    let sandbox = Sandbox::new();
    sandbox.write("fleet.json", &seed_reviewed());
    let cases: &[&[&str]] = &[
        &["fleet", "plan"],
        &["fleet", "plan", "fleet.json"],
        &[
            "fleet",
            "apply",
            "fleet.json",
            "--tenant",
            "root",
            "--yes",
            "--plan-hash",
            "abc",
        ],
        // Not a planHash: a usage error, before any request.
        &[
            "fleet",
            "apply",
            "fleet.json",
            "--tenant",
            "root",
            "--plan-hash",
            "abc",
        ],
        &["fleet", "status"],
        &[
            "fleet",
            "plan",
            "fleet.json",
            "--tenant",
            "root",
            "--output",
            "yaml",
        ],
        &["fleet", "validate"],
        &["fleet", "frobnicate"],
        // A connection flag twice is refused at either level, not the later one silently used.
        &[
            "fleet", "status", "--tenant", "root", "--url", "http://a", "--url", "http://b",
        ],
        &[
            "fleet", "--url", "http://a", "status", "--tenant", "root", "--url", "http://b",
        ],
        &[
            "fleet",
            "--url=http://a",
            "status",
            "--tenant",
            "root",
            "--url",
            "http://b",
        ],
        &[
            "fleet",
            "--config",
            "a.toml",
            "validate",
            "fleet.json",
            "--config=b.toml",
        ],
    ];
    for args in cases {
        let run = sandbox.run(args, &[]);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.starts_with("error: "),
            "{args:?}: {}",
            run.stderr
        );
    }
}

/// A bad `serve` setting is told as it was written: the flag, the variable (clap names the
/// flag either way) or the file's key and the file. Nothing starts.
#[test]
fn serve_says_where_a_bad_setting_was_written() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path("drift.toml"), "driftEvery = \"5 parsecs\"\n").unwrap();
    std::fs::write(
        sandbox.path("listen.toml"),
        "listen = \"127.0.0.1:99999\"\n",
    )
    .unwrap();
    let db = ["--database", "sqlite://never.db"];
    // Flags, variables, exit code, the start of the error.
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], i32, &'a str);
    let cases: &[Case] = &[
        (
            &["--listen", "foo:bar"],
            &[],
            2,
            "error: invalid value 'foo:bar' for '--listen <LISTEN>': not HOST:PORT, such as \
             127.0.0.1:8080, [::1]:8080 or localhost:8080\n\nFor more information",
        ),
        (
            &[],
            &[("BETTER_COMPUTE_LISTEN", "foo:bar")],
            2,
            "error: invalid value 'foo:bar' for '--listen <LISTEN>': not HOST:PORT, such as \
             127.0.0.1:8080, [::1]:8080 or localhost:8080\n  \
             (the value of the variable BETTER_COMPUTE_LISTEN)\n\nFor more information",
        ),
        (
            &[],
            &[("BETTER_COMPUTE_VPS", "maybe")],
            2,
            "error: invalid value 'maybe' for '--vps <VPS>': value was not a boolean\n  \
             (the value of the variable BETTER_COMPUTE_VPS)\n",
        ),
        (
            &["--drift-every", "0s"],
            &[],
            1,
            "error: --drift-every \"0s\" must be more than 0\n",
        ),
        (
            &[],
            &[("BETTER_COMPUTE_DRIFT_EVERY", "abc")],
            1,
            "error: BETTER_COMPUTE_DRIFT_EVERY \"abc\" is not a duration such as 15m or 2s: ",
        ),
        (
            &["--config", "drift.toml"],
            &[],
            1,
            "error: driftEvery \"5 parsecs\" in drift.toml is not a duration such as 15m or 2s: ",
        ),
        (
            &["--config", "listen.toml"],
            &[],
            1,
            "error: listen \"127.0.0.1:99999\" in listen.toml is not HOST:PORT, such as \
             127.0.0.1:8080, [::1]:8080 or localhost:8080\n",
        ),
    ];
    for (args, vars, code, expected) in cases {
        let args: Vec<&str> = ["serve"].iter().chain(*args).chain(&db).copied().collect();
        let run = sandbox.run(&args, vars);
        assert_eq!(run.code, *code, "{args:?} {vars:?}: {}", run.stderr);
        // The server logs its start before it reads the settings: the error is the last line.
        let error = &run.stderr[run.stderr.find("error: ").unwrap_or(0)..];
        assert!(
            error.starts_with(expected),
            "{args:?} {vars:?}:\n{}",
            run.stderr
        );
    }
    assert!(!sandbox.path("never.db").exists());
}

#[test]
fn a_missing_url_or_token_says_how_to_provide_it() {
    let sandbox = Sandbox::new();
    sandbox.write("fleet.json", &seed_reviewed());
    let run = sandbox.run(&["fleet", "status", "--tenant", "root"], &[]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.starts_with(
            "error: no server URL: pass --url URL, set BETTER_COMPUTE_URL, or put `url = "
        ) && run.stderr.contains("config.toml"),
        "{}",
        run.stderr
    );
    let run = sandbox.run(
        &[
            "fleet",
            "plan",
            "fleet.json",
            "--tenant",
            "root",
            "--url",
            "http://127.0.0.1:9",
        ],
        &[],
    );
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .starts_with("error: no API key: set BETTER_COMPUTE_TOKEN, or put `token = "),
        "{}",
        run.stderr
    );
    let run = sandbox.run(
        &[
            "fleet",
            "status",
            "--tenant",
            "root",
            "--config",
            "nonexistent.toml",
        ],
        &[],
    );
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("nonexistent.toml"), "{}", run.stderr);
    // A document's mistake is reported before the connection is asked for, by plan and apply
    // alike: the file is the thing to fix first.
    std::fs::write(sandbox.path("broken.json"), "{\"version\": 1,").unwrap();
    for command in ["plan", "apply"] {
        for file in ["broken.json", "absent.json"] {
            let run = sandbox.run(&["fleet", command, file, "--tenant", "root"], &[]);
            assert_eq!(run.code, 1, "{command} {file}: {}", run.stderr);
            assert!(
                run.stderr.contains(file) && !run.stderr.contains("no server URL"),
                "{command} {file}: {}",
                run.stderr
            );
        }
    }
}

#[test]
fn export_refuses_to_overwrite_a_file() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path("fleet.json"), "precious").unwrap();
    // Nothing listens on port 9: the refusal comes before any request.
    let vars = [
        ("BETTER_COMPUTE_URL", "http://127.0.0.1:9"),
        ("BETTER_COMPUTE_TOKEN", "t"),
    ];
    let run = sandbox.run(
        &["fleet", "export", "--tenant", "root", "--out", "fleet.json"],
        &vars,
    );
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "error: fleet.json already exists; refusing to overwrite it (remove it or choose another file)\n"
    );
    let run = sandbox.run(
        &[
            "fleet",
            "export",
            "--tenant",
            "root",
            "--out",
            "new.json",
            "--state",
            "fleet.json",
        ],
        &vars,
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("refusing to overwrite"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(sandbox.path("fleet.json")).unwrap(),
        "precious"
    );
    assert!(!sandbox.path("new.json").exists());
    // Without any key or URL too: the file is the first thing checked.
    let run = sandbox.run(
        &["fleet", "export", "--tenant", "root", "--out", "fleet.json"],
        &[],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("refusing to overwrite"),
        "{}",
        run.stderr
    );

    // And an unreachable server is an error exit 1 that names it.
    let run = sandbox.run(
        &["fleet", "export", "--tenant", "root", "--out", "new.json"],
        &vars,
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .starts_with("error: cannot reach http://127.0.0.1:9: "),
        "{}",
        run.stderr
    );
}

/// Export files are moved in whole: a name taken while the server answered is refused (the
/// other's file kept, the other file of the export removed), no temporary file stays behind,
/// and a file written has the mode any new file of the user has (not a temporary file's 0600).
#[test]
fn export_files_appear_whole_and_never_over_another() {
    let sandbox = Sandbox::new();
    let folder = sandbox.path("");
    let taken = folder.join("late.json");
    let stub = Stub::start(move |_| {
        // Someone else writes the state's name while the server answers.
        std::fs::write(&taken, "theirs").unwrap();
        Some((200, json!({ "config": { "version": 1 }, "missing": [] })))
    });
    let vars = [
        ("BETTER_COMPUTE_URL", stub.url.as_str()),
        ("BETTER_COMPUTE_TOKEN", "t"),
    ];
    let export = |out: &str, state: &str| {
        sandbox.run(
            &[
                "fleet", "export", "--tenant", "root", "--out", out, "--state", state,
            ],
            &vars,
        )
    };
    let run = export("new.json", "late.json");
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "error: late.json already exists; refusing to overwrite it (remove it or choose another file)\n"
    );
    assert_eq!(
        std::fs::read_to_string(folder.join("late.json")).unwrap(),
        "theirs"
    );
    assert!(!folder.join("new.json").exists(), "all or nothing");
    let leftovers = || -> Vec<String> {
        std::fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".tmp"))
            .collect()
    };
    assert_eq!(leftovers(), Vec::<String>::new());

    let run = export("fleet.json", "state.json");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(leftovers(), Vec::<String>::new());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |name: &str| {
            std::fs::metadata(folder.join(name))
                .unwrap()
                .permissions()
                .mode()
        };
        std::fs::write(folder.join("plain.txt"), "").unwrap();
        assert_eq!(mode("fleet.json"), mode("plain.txt"));
        assert_eq!(mode("state.json"), mode("plain.txt"));
    }
}

#[test]
fn colour_only_when_asked_and_never_with_no_color() {
    let sandbox = Sandbox::new();
    sandbox.write("export.json", &export_of(&seed_before_review()));
    sandbox.write("fleet.json", &seed_reviewed());
    let args = ["fleet", "plan", "fleet.json", "--state", "export.json"];
    // Piped: plain.
    assert!(!sandbox.run(&args, &[]).stdout.contains('\x1b'));
    let forced = sandbox.run(&args, &[("CLICOLOR_FORCE", "1")]);
    assert!(
        forced
            .stdout
            .starts_with("\x1b[33m~ pool vps-fra (policy)\x1b[0m\n"),
        "{:?}",
        forced.stdout
    );
    let no_color = sandbox.run(&args, &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert!(!no_color.stdout.contains('\x1b'));
}

#[test]
fn every_command_has_help_with_an_example() {
    let sandbox = Sandbox::new();
    for command in ["export", "plan", "apply", "status", "validate"] {
        let run = sandbox.run(&["fleet", command, "--help"], &[]);
        assert_eq!(run.code, 0, "{command}: {}", run.stderr);
        let example = format!("  better-compute fleet {command} ");
        assert!(run.stdout.contains("Example"), "{command}:\n{}", run.stdout);
        assert!(run.stdout.contains(&example), "{command}:\n{}", run.stdout);
    }
    let run = sandbox.run(&["fleet", "--help"], &[]);
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("BETTER_COMPUTE_TOKEN") && run.stdout.contains("Exit codes"));
    // docs/cli.md: every command, the server and completions included.
    for command in ["serve", "completions"] {
        let run = sandbox.run(&[command, "--help"], &[]);
        assert_eq!(run.code, 0, "{command}: {}", run.stderr);
        let example = format!("  better-compute {command} ");
        assert!(run.stdout.contains("Example"), "{command}:\n{}", run.stdout);
        assert!(run.stdout.contains(&example), "{command}:\n{}", run.stdout);
    }
}

#[test]
fn completions_for_each_shell() {
    let sandbox = Sandbox::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let run = sandbox.run(&["completions", shell], &[]);
        assert_eq!(run.code, 0, "{shell}: {}", run.stderr);
        assert!(run.stdout.contains("better-compute"), "{shell}");
        assert!(run.stdout.contains("plan-hash"), "{shell}");
    }
    assert_eq!(sandbox.run(&["completions", "tcsh"], &[]).code, 2);
}

/// The bash script completes past the first word: subcommands, then their flags (the
/// generator's labels for a hyphenated program did not match, clap-rs/clap#6421).
#[test]
fn bash_completes_subcommands_and_their_flags() {
    let sandbox = Sandbox::new();
    let script = sandbox.run(&["completions", "bash"], &[]).stdout;
    std::fs::write(sandbox.path("c.bash"), script).unwrap();
    let complete = |words: &[&str]| -> Vec<String> {
        let words: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
        let cword = words.len() - 1;
        let program = format!(
            "set -e; source ./c.bash; COMP_WORDS=({}); COMP_CWORD={cword}; \
             _better__compute better-compute {} {}; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            words.join(" "),
            words[cword],
            words[cword - 1],
        );
        let out = std::process::Command::new("bash")
            .args(["-c", &program])
            .current_dir(sandbox.path(""))
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(complete(&["better-compute", "fl"]), ["fleet"]);
    let mut commands = complete(&["better-compute", "fleet", ""]);
    commands.retain(|c| !c.starts_with('-'));
    commands.sort();
    assert_eq!(
        commands,
        ["apply", "export", "help", "plan", "status", "validate"]
    );
    assert!(complete(&["better-compute", "fleet", "plan", "--t"]).contains(&"--tenant".to_owned()));
    assert_eq!(
        complete(&["better-compute", "fleet", "apply", "--plan-h"]),
        ["--plan-hash"]
    );
}

#[test]
fn a_state_that_is_not_an_export_is_an_error() {
    let sandbox = Sandbox::new();
    sandbox.write("fleet.json", &seed_reviewed());
    // Why `fleet plan --state` refuses `state`, after the line's fixed start.
    let refused = |state: &Value| -> String {
        sandbox.write("export.json", state);
        let run = sandbox.run(
            &["fleet", "plan", "fleet.json", "--state", "export.json"],
            &[],
        );
        assert_eq!(run.code, 1, "{}", run.stderr);
        run.stderr
            .strip_prefix("error: export.json is not a saved export (write one with `fleet export --state FILE`): ")
            .unwrap_or_else(|| panic!("{}", run.stderr))
            .to_owned()
    };
    refused(&seed_reviewed());
    // serde would read the export's fields from a list in their order: refused, as the
    // browser's planner refuses it.
    let export = export_of(&seed_before_review());
    let fields: Vec<Value> = [
        "tenantId",
        "caller",
        "config",
        "missing",
        "objects",
        "tenants",
        "offeredPools",
    ]
    .iter()
    .map(|k| export.get(*k).cloned().unwrap_or(json!([])))
    .collect();
    assert_eq!(
        refused(&Value::Array(fields)),
        "must be a JSON object (what fleet.export answers)\n"
    );
    // What is wrong inside is said at its path, in JSON's words, with its place; and the
    // config must be version 1, as a document must.
    let mut broken = export.clone();
    broken["objects"][0]["revision"] = json!(-1);
    let why = refused(&broken);
    assert!(
        why.starts_with("objects[0].revision: invalid value: integer `-1`, expected a non-negative integer at line "),
        "{why}"
    );
    let mut broken = export.clone();
    broken["config"]["version"] = json!(2);
    let why = refused(&broken);
    assert!(
        why.starts_with("config.version: must be 1, not 2 at line "),
        "{why}"
    );
    // A byte order mark is said as a document's is.
    let mut marked = b"\xEF\xBB\xBF".to_vec();
    marked.extend(serde_json::to_vec(&export).unwrap());
    std::fs::write(sandbox.path("export.json"), marked).unwrap();
    let run = sandbox.run(
        &["fleet", "plan", "fleet.json", "--state", "export.json"],
        &[],
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.ends_with(
            ": starts with a UTF-8 byte order mark; save it without one at line 1 column 1\n"
        ),
        "{}",
        run.stderr
    );
    sandbox.write("export.json", &export);
    let run = sandbox.run(
        &[
            "fleet",
            "plan",
            "fleet.json",
            "--state",
            "export.json",
            "--tenant",
            "acme",
        ],
        &[],
    );
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "error: --tenant acme does not match export.json, an export of tenant root\n"
    );
}

#[test]
fn output_that_cannot_be_written_is_an_error() {
    let sandbox = Sandbox::new();
    sandbox.write("export.json", &export_of(&seed_before_review()));
    sandbox.write("fleet.json", &seed_reviewed());
    let plan = ["fleet", "plan", "fleet.json", "--state", "export.json"];
    let json = [&plan[..], &["--output", "json"]].concat();
    let validate = ["fleet", "validate", "fleet.json"];
    // Help and the version too, which clap would print and exit 0 after a failed write.
    let help: [&[&str]; 4] = [&["--help"], &["fleet", "--help"], &["help"], &["--version"]];
    for args in [&plan[..], &json, &validate].into_iter().chain(help) {
        let run = sandbox.run_with(args, &[], |command| {
            command.stdout(full_disk());
        });
        assert_eq!(run.code, 1, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr
                .starts_with("error: cannot write to standard output: "),
            "{args:?}: {}",
            run.stderr
        );
    }
}

/// A planHash well formed, for calls the stub answers whatever the hash.
const SOME_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

#[test]
fn a_lost_answer_to_fleet_apply_says_the_outcome_is_unknown() {
    let sandbox = Sandbox::new();
    sandbox.write("fleet.json", &seed_reviewed());
    let stub = Stub::start(|_| None);
    let vars = [
        ("BETTER_COMPUTE_URL", stub.url.as_str()),
        ("BETTER_COMPUTE_TOKEN", "t"),
    ];
    let apply = [
        "fleet",
        "apply",
        "fleet.json",
        "--tenant",
        "root",
        "--prune",
        "--plan-hash",
        SOME_HASH,
    ];
    let run = sandbox.run(&apply, &vars);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(*stub.paths.lock().unwrap(), ["/api/fleet.apply"]);
    assert!(
        run.stderr.starts_with("error: no answer to fleet.apply (")
            && run.stderr.contains(
                "the outcome is unknown, the server may have applied it; \
                 `better-compute fleet status --tenant root` shows the last apply and \
                 `better-compute fleet plan fleet.json --tenant root --prune` what is still to change\n"
            )
            && !run.stderr.contains("cannot reach"),
        "{}",
        run.stderr
    );
    // Any other call says it got no answer, not that the server is unreachable.
    let run = sandbox.run(&["fleet", "status", "--tenant", "root"], &vars);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.starts_with(
            "error: no answer to fleet.status: the connection broke before the answer came: "
        ),
        "{}",
        run.stderr
    );
    // Nothing listening: nothing was sent.
    let closed = [
        ("BETTER_COMPUTE_URL", "http://127.0.0.1:9"),
        ("BETTER_COMPUTE_TOKEN", "t"),
    ];
    let run = sandbox.run(&apply, &closed);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("error: cannot reach http://127.0.0.1:9: "),
        "{}",
        run.stderr
    );
}

/// A redirect is told, not followed (reqwest would drop the key, and a 301 would make the POST
/// a GET without its document); a page that is not JSON says the URL may not be the server's.
#[test]
fn a_redirect_or_a_page_is_not_the_server() {
    let sandbox = Sandbox::new();
    let target = Stub::start(|_| Some((200, json!({ "tenantId": "root" }))));
    let location = format!("{}/api/fleet.status", target.url);
    let redirect =
        Stub::raw(move |_| Some((307, format!("location: {location}\r\n"), String::new())));
    let vars = [
        ("BETTER_COMPUTE_URL", redirect.url.as_str()),
        ("BETTER_COMPUTE_TOKEN", "t"),
    ];
    let run = sandbox.run(&["fleet", "status", "--tenant", "root"], &vars);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        format!(
            "error: HTTP_307: the server answered 307 Temporary Redirect, a redirect to \
             {}/api/fleet.status; the CLI does not follow redirects (the API key would not go \
             along): give the URL it redirects to\n",
            target.url
        )
    );
    assert!(target.paths.lock().unwrap().is_empty(), "not followed");
    // A login page answering 200.
    let page = Stub::raw(|_| {
        Some((
            200,
            "content-type: text/html\r\n".into(),
            "<html>Sign in</html>".into(),
        ))
    });
    let vars = [
        ("BETTER_COMPUTE_URL", page.url.as_str()),
        ("BETTER_COMPUTE_TOKEN", "t"),
    ];
    let run = sandbox.run(&["fleet", "status", "--tenant", "root"], &vars);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.starts_with(
            "error: the answer of fleet.status is not what this CLI expects: the server answered \
             200 OK with text that is not JSON ("
        ) && run
            .stderr
            .ends_with("); is the URL a better-compute server, without a path?\n"),
        "{}",
        run.stderr
    );
}

#[test]
fn apply_prints_the_problems_of_a_server_that_refuses_the_document() {
    let sandbox = Sandbox::new();
    let path = sandbox.write("fleet.json", &seed_reviewed());
    // A server of another version that refuses what this CLI's validation accepts.
    let refusal = json!({ "error": {
        "code": "INVALID_INPUT",
        "message": "the document does not validate",
        "details": { "problems": [
            { "path": "pools[0].name", "message": "the server says no" },
            { "path": "tenantId", "message": "not the document's" }
        ] }
    } });
    // fleet.plan answers the plan against the current fleet; fleet.apply refuses.
    let plan = serde_json::to_value(planned(
        &seed_reviewed(),
        &export_of(&seed_before_review()),
        false,
    ))
    .unwrap();
    let stub = Stub::start(move |path| {
        Some(if path == "/api/fleet.plan" {
            (200, plan.clone())
        } else {
            (400, refusal.clone())
        })
    });
    let vars = [
        ("BETTER_COMPUTE_URL", stub.url.as_str()),
        ("BETTER_COMPUTE_TOKEN", "t"),
    ];
    let text = std::fs::read_to_string(&path).unwrap();
    let problem = planner::Problem {
        path: "pools[0].name".to_owned(),
        message: "the server says no".to_owned(),
    };
    let at = planner::locate::locate_problem(&text, &problem).unwrap();
    let expected = format!(
        "fleet.json:{}:{}: pools[0].name: the server says no\n\
         error: INVALID_INPUT: the document does not validate\n",
        at.line, at.column
    );
    for output in ["text", "json"] {
        let run = sandbox.run(
            &[
                "fleet",
                "apply",
                "fleet.json",
                "--tenant",
                "root",
                "--plan-hash",
                SOME_HASH,
                "--output",
                output,
            ],
            &vars,
        );
        assert_eq!((run.code, run.stderr.as_str()), (1, expected.as_str()));
        assert_eq!(run.stdout, "");
    }
    // And so does the apply step of `--yes`, after the plan it printed.
    let run = sandbox.run(
        &["fleet", "apply", "fleet.json", "--tenant", "root", "--yes"],
        &vars,
    );
    assert_eq!((run.code, run.stderr.as_str()), (1, expected.as_str()));
    assert!(run.stdout.ends_with(" unchanged.\n"), "{}", run.stdout);
    assert_eq!(
        stub.paths.lock().unwrap().last().map(String::as_str),
        Some("/api/fleet.apply")
    );
}

/// A pipe whose reader has gone (`| head -c1` after its byte): every write fails with EPIPE.
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Stdio::from(writer)
}

#[test]
fn a_closed_pipe_is_no_panic() {
    let sandbox = Sandbox::new();
    sandbox.write("export.json", &export_of(&seed_before_review()));
    sandbox.write("fleet.json", &seed_reviewed());
    // Standard output closed: the output is dropped, the exit code is the command's.
    for (args, code) in [
        (&["completions", "bash"][..], 0),
        (
            &["fleet", "plan", "fleet.json", "--state", "export.json"],
            0,
        ),
        (&["fleet", "validate", "fleet.json"], 0),
    ] {
        let run = sandbox.run_with(args, &[], |command| {
            command.stdout(closed_pipe());
        });
        assert_eq!((run.code, run.stderr.as_str()), (code, ""), "{args:?}");
    }
    // Standard error closed: the error is lost, its exit code is not.
    for (args, code) in [
        (&["fleet", "status", "--tenant", "root"][..], 2),
        (
            &["fleet", "plan", "missing.json", "--state", "export.json"],
            1,
        ),
    ] {
        let run = sandbox.run_with(args, &[], |command| {
            command.stderr(closed_pipe());
        });
        assert_eq!(run.code, code, "{args:?}");
    }
}

#[test]
fn export_checks_both_files_before_writing_anything() {
    let sandbox = Sandbox::new();
    let stub = Stub::start(|_| Some((200, json!({ "config": { "version": 1 }, "missing": [] }))));
    let vars = [
        ("BETTER_COMPUTE_URL", stub.url.as_str()),
        ("BETTER_COMPUTE_TOKEN", "t"),
    ];
    std::fs::create_dir(sandbox.path("sub")).unwrap();
    // One file under two spellings is a usage error, before any request.
    for (out, state) in [
        ("./a.json", "a.json"),
        ("a.json", "sub/../a.json"),
        ("sub/a.json", "./sub//a.json"),
    ] {
        let run = sandbox.run(
            &[
                "fleet", "export", "--tenant", "root", "--out", out, "--state", state,
            ],
            &vars,
        );
        assert_eq!(
            (run.code, run.stderr.as_str()),
            (2, "error: --out and --state must name different files\n"),
            "{out} {state}"
        );
    }
    // A folder that does not exist: nothing on standard output, no file, no request.
    let run = sandbox.run(
        &[
            "fleet",
            "export",
            "--tenant",
            "root",
            "--state",
            "nodir/st.json",
        ],
        &vars,
    );
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            1,
            "",
            "error: cannot create nodir/st.json: nodir is not a folder\n"
        )
    );
    let run = sandbox.run(
        &[
            "fleet",
            "export",
            "--tenant",
            "root",
            "--out",
            "a.json",
            "--state",
            "nodir/st.json",
        ],
        &vars,
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(!sandbox.path("a.json").exists());
    // A path ending in `/` names a folder, not a new file.
    let run = sandbox.run(
        &["fleet", "export", "--tenant", "root", "--out", "new/"],
        &vars,
    );
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "error: cannot create new/: it names a folder; give a file name\n"
        )
    );
    assert!(stub.paths.lock().unwrap().is_empty());
    // Both fine: the document on standard output, the answer in the file.
    let run = sandbox.run(
        &[
            "fleet",
            "export",
            "--tenant",
            "root",
            "--state",
            "sub/st.json",
        ],
        &vars,
    );
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "{\n  \"version\": 1\n}\n")
    );
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(sandbox.path("sub/st.json")).unwrap())
            .unwrap();
    assert_eq!(state["config"]["version"], 1);
}

#[test]
fn text_that_is_not_utf8_is_located_and_a_byte_order_mark_named() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.path("latin1.json"),
        b"{\n  \"version\": \"\xff\"\n}\n",
    )
    .unwrap();
    let run = sandbox.run(&["fleet", "validate", "latin1.json"], &[]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "latin1.json:2:15: the document is not valid JSON: invalid unicode code point at \
             line 2 column 15\n\
             error: INVALID_INPUT: latin1.json does not validate (1 problem)\n"
        )
    );
    std::fs::write(
        sandbox.path("bom.json"),
        b"\xEF\xBB\xBF{ \"version\": 1 }\n",
    )
    .unwrap();
    let run = sandbox.run(&["fleet", "validate", "bom.json"], &[]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "bom.json:1:1: the document starts with a UTF-8 byte order mark; save it without \
             one\n\
             error: INVALID_INPUT: bom.json does not validate (1 problem)\n"
        )
    );
}

#[test]
fn a_key_no_header_can_hold_or_a_broken_url_is_a_usage_error() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(
        &["fleet", "status", "--tenant", "root"],
        &[
            ("BETTER_COMPUTE_URL", "http://127.0.0.1:9"),
            ("BETTER_COMPUTE_TOKEN", "bc_secret\nrest"),
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("error: the API key in BETTER_COMPUTE_TOKEN holds a control character")
            && !run.stderr.contains("secret"),
        "{}",
        run.stderr
    );
    let run = sandbox.run(
        &[
            "fleet",
            "status",
            "--tenant",
            "root",
            "--url",
            "http://[::1",
        ],
        &[("BETTER_COMPUTE_TOKEN", "t")],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("error: the server URL \"http://[::1\" is not a valid URL: "),
        "{}",
        run.stderr
    );
}

/// Standard input read from the file `name` in the sandbox.
fn stdin_from(sandbox: &Sandbox, name: &str) -> Stdio {
    Stdio::from(std::fs::File::open(sandbox.path(name)).unwrap())
}

#[test]
fn a_dash_is_standard_input_for_documents_and_standard_output_for_export() {
    let sandbox = Sandbox::new();
    let export = export_of(&seed_before_review());
    sandbox.write("export.json", &export);
    sandbox.write("fleet.json", &seed_reviewed());
    std::fs::write(sandbox.path("bad.json"), "{\n  \"version\": 2\n}\n").unwrap();
    let piped = |args: &[&str], vars: &[(&str, &str)], file: &str| {
        sandbox.run_with(args, vars, |command| {
            command.stdin(stdin_from(&sandbox, file));
        })
    };

    let run = piped(&["fleet", "validate", "-"], &[], "fleet.json");
    assert_eq!((run.code, run.stdout.as_str()), (0, "<stdin>: valid\n"));
    let run = piped(&["fleet", "validate", "fleet.json", "-"], &[], "bad.json");
    assert_eq!(run.code, 1);
    assert_eq!(run.stdout, "fleet.json: valid\n");
    assert!(
        run.stderr.starts_with("<stdin>:2:14: version: ")
            && run
                .stderr
                .ends_with("error: INVALID_INPUT: 1 of 2 files do not validate\n"),
        "{}",
        run.stderr
    );
    let run = piped(&["fleet", "validate", "-", "-"], &[], "fleet.json");
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (2, "error: standard input (-) can be read only once\n")
    );

    // --state names a file: standard input is the document's.
    let run = piped(
        &["fleet", "plan", "fleet.json", "--state", "-"],
        &[],
        "export.json",
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.starts_with("error: --state needs a file"),
        "{}",
        run.stderr
    );

    // plan reads it as it reads a file.
    let from_file = sandbox.run(
        &["fleet", "plan", "fleet.json", "--state", "export.json"],
        &[],
    );
    let run = piped(
        &["fleet", "plan", "-", "--state", "export.json"],
        &[],
        "fleet.json",
    );
    assert_eq!(
        (run.code, &run.stdout),
        (0, &from_file.stdout),
        "{}",
        run.stderr
    );

    // apply's review prints `-` as it is: the next run reads standard input again.
    let plan = serde_json::to_value(planned(&seed_reviewed(), &export, false)).unwrap();
    let hash = plan["planHash"].as_str().unwrap().to_owned();
    let stub = Stub::start(move |_| Some((200, plan.clone())));
    let vars = [
        ("BETTER_COMPUTE_URL", stub.url.as_str()),
        ("BETTER_COMPUTE_TOKEN", "t"),
    ];
    let run = piped(
        &["fleet", "apply", "-", "--tenant", "root"],
        &vars,
        "fleet.json",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.ends_with(&format!(
            "Nothing was applied. To apply this exact plan: better-compute fleet apply - \
             --tenant root --plan-hash {hash}\n"
        )),
        "{}",
        run.stdout
    );

    // export --out - is standard output; --state - is refused.
    let stub = Stub::start(|_| Some((200, json!({ "config": { "version": 1 }, "missing": [] }))));
    let vars = [
        ("BETTER_COMPUTE_URL", stub.url.as_str()),
        ("BETTER_COMPUTE_TOKEN", "t"),
    ];
    let run = sandbox.run(
        &[
            "fleet", "export", "--tenant", "root", "--out", "-", "--state", "st.json",
        ],
        &vars,
    );
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            0,
            "{\n  \"version\": 1\n}\n",
            "Wrote tenant root's export to st.json.\n"
        )
    );
    assert!(sandbox.path("st.json").is_file() && !sandbox.path("-").exists());
    let run = sandbox.run(
        &["fleet", "export", "--tenant", "root", "--state", "-"],
        &vars,
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
}

/// A variable that is not UTF-8 is neither empty (unset) nor a URL or key: a usage error naming
/// it, never the file's value instead, never the value printed.
#[test]
fn a_variable_that_is_not_utf8_is_a_usage_error_naming_it() {
    use std::os::unix::ffi::OsStrExt as _;
    let sandbox = Sandbox::new();
    // The file gives both: reading it instead would try to reach port 9 (exit 1).
    std::fs::write(
        sandbox.path("ci.toml"),
        "url = \"http://127.0.0.1:9\"\ntoken = \"file-token\"\n",
    )
    .unwrap();
    let status = ["fleet", "status", "--tenant", "root", "--config", "ci.toml"];
    for (name, what) in [
        ("BETTER_COMPUTE_TOKEN", "the API key"),
        ("BETTER_COMPUTE_URL", "the server URL"),
    ] {
        let run = sandbox.run_with(&status, &[], |command| {
            command.env(name, std::ffi::OsStr::from_bytes(b"bc_secret\xff"));
        });
        assert_eq!(run.code, 2, "{name}: {}", run.stderr);
        assert!(
            run.stderr
                .starts_with(&format!("error: {what} in {name} is not UTF-8 text; "))
                && !run.stderr.contains("secret"),
            "{name}: {}",
            run.stderr
        );
    }
}

/// A repeated key is located at its repeat, the problem, not at the key read first.
#[test]
fn a_duplicate_key_is_located_at_its_repeat() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.path("dup.json"),
        r#"{
  "version": 1,
  "sites": [{ "name": "fra",
    "kind": "shared",
    "region": "eu",
    "name": "ber" }],
  "pools": [{ "name": "p", "site": "fra", "class": "vps-host",
    "ownerQuota": { "gpu": 1, "gpu": 2, "gpu": 3 } }]
}
"#,
    )
    .unwrap();
    let run = sandbox.run(&["fleet", "validate", "dup.json"], &[]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "dup.json:6:13: sites[0].name: duplicate key \"name\"; each key may appear once\n\
             dup.json:8:38: pools[0].ownerQuota.gpu: duplicate key \"gpu\"; each key may appear once\n\
             dup.json:8:48: pools[0].ownerQuota.gpu: duplicate key \"gpu\"; each key may appear once\n\
             error: INVALID_INPUT: dup.json does not validate (3 problems)\n"
        )
    );
}

/// A problem of the whole document is at the document, as any other is at its value.
#[test]
fn a_problem_of_the_whole_document_has_its_place() {
    let sandbox = Sandbox::new();
    for (text, expected) in [
        (
            "{\"sites\":[]}",
            "f.json:1:1: missing required field \"version\"",
        ),
        ("[]", "f.json:1:1: a document must be an object, not a list"),
        (
            "\n  null\n",
            "f.json:2:3: a document must be an object, not null",
        ),
    ] {
        std::fs::write(sandbox.path("f.json"), text).unwrap();
        let run = sandbox.run(&["fleet", "validate", "f.json"], &[]);
        assert_eq!(
            (run.code, run.stderr.as_str()),
            (
                1,
                format!("{expected}\nerror: INVALID_INPUT: f.json does not validate (1 problem)\n")
                    .as_str()
            ),
            "{text:?}"
        );
    }
}

/// `--config FILE` must exist and is read whatever else is given: by the commands that need
/// no server too.
#[test]
fn the_config_file_is_read_by_offline_commands_too() {
    let sandbox = Sandbox::new();
    sandbox.write("fleet.json", &seed_reviewed());
    sandbox.write("export.json", &export_of(&seed_before_review()));
    std::fs::write(sandbox.path("broken.toml"), "url = \n").unwrap();
    std::fs::write(sandbox.path("ok.toml"), "url = \"http://127.0.0.1:9\"\n").unwrap();
    let validate = ["fleet", "validate", "fleet.json"];
    let plan = ["fleet", "plan", "fleet.json", "--state", "export.json"];
    for command in [&validate[..], &plan[..]] {
        for (config, message) in [
            (
                "nope.toml",
                "error: cannot read the configuration file nope.toml: ",
            ),
            (
                "broken.toml",
                "error: the configuration file broken.toml is not valid: ",
            ),
        ] {
            let args = [command, &["--config", config]].concat();
            let run = sandbox.run(&args, &[]);
            assert_eq!(
                (run.code, run.stdout.as_str()),
                (2, ""),
                "{args:?}: {}",
                run.stderr
            );
            assert!(run.stderr.starts_with(message), "{args:?}: {}", run.stderr);
        }
        let args = [command, &["--config", "ok.toml"]].concat();
        let run = sandbox.run(&args, &[]);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
    }
    // A document's mistakes come first, as when plan connects.
    std::fs::write(sandbox.path("bad.json"), "{\"version\": 2}").unwrap();
    let run = sandbox.run(
        &[
            "fleet",
            "plan",
            "bad.json",
            "--state",
            "export.json",
            "--config",
            "nope.toml",
        ],
        &[],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.starts_with("bad.json:1:13: version: "),
        "{}",
        run.stderr
    );
}

/// The column ending a syntax error's message is the prefix's: characters, not serde_json's
/// bytes (`é` is two).
#[test]
fn a_syntax_errors_column_is_the_prefixs() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.path("f.json"),
        b"{\"version\":1,\"sites\":[{\"name\":\"fra\",\"kind\":\"shared\",\"region\":\"\xc3\xa9\xc3\xa9\"}],\xff}",
    )
    .unwrap();
    let run = sandbox.run(&["fleet", "validate", "f.json"], &[]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "f.json:1:69: the document is not valid JSON: invalid unicode code point at line 1 \
             column 69\n\
             error: INVALID_INPUT: f.json does not validate (1 problem)\n"
        )
    );
    std::fs::write(
        sandbox.path("f.json"),
        "{\"version\": 1,\n \"sites\": [{\"region\": \"éé\"}], x}",
    )
    .unwrap();
    let run = sandbox.run(&["fleet", "validate", "f.json"], &[]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "f.json:2:31: the document is not valid JSON: key must be a string at line 2 column \
             31\n\
             error: INVALID_INPUT: f.json does not validate (1 problem)\n"
        )
    );
    // A saved export's place is counted the same way.
    sandbox.write("fleet.json", &seed_reviewed());
    std::fs::write(sandbox.path("export.json"), "{\"tenantId\": \"é\", x}").unwrap();
    let run = sandbox.run(
        &["fleet", "plan", "fleet.json", "--state", "export.json"],
        &[],
    );
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "error: export.json is not a saved export (write one with `fleet export --state \
             FILE`): key must be a string at line 1 column 19\n"
        )
    );
}
