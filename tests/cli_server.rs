//! The `better-compute fleet` commands against the real server: `serve` on a loopback port
//! with a fresh SQLite file, the CLI run as a user runs it, and hand edits made through the
//! HTTP API as an operator would during an incident.

mod common;

use common::{Server, TempDir, seed_before_review, seed_reviewed};
use serde_json::{Value, json};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a run of the CLI did.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// A server, its administrator's key, and a folder to run the CLI in.
struct Deployment {
    server: Server,
    key: String,
    dir: TempDir,
    http: reqwest::blocking::Client,
}

impl Deployment {
    /// Starts `serve` on a fresh SQLite file with `extra` flags and creates the tenants
    /// `acme` and `globex`.
    fn start(extra: &[&str]) -> Deployment {
        let dir = TempDir::new("cli");
        let key_file = dir.path().join("admin.key");
        let database = format!("sqlite://{}", dir.path().join("fleet.db").display());
        let mut args = vec![
            "--database".to_owned(),
            database,
            "--admin-key-file".to_owned(),
            key_file.display().to_string(),
        ];
        args.extend(extra.iter().map(|arg| arg.to_string()));
        let server = Server::start(&args);
        let key = std::fs::read_to_string(&key_file)
            .expect("the server writes the administrator's key before listening")
            .trim()
            .to_owned();
        let deployment = Deployment {
            server,
            key,
            dir,
            http: reqwest::blocking::Client::new(),
        };
        for tenant in ["acme", "globex"] {
            deployment
                .api("tenant.create", json!({ "id": tenant }))
                .unwrap_or_else(|e| panic!("tenant.create {tenant}: {e}"));
        }
        deployment
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, value: &Value) {
        std::fs::write(
            self.path(name),
            serde_json::to_string_pretty(value).unwrap(),
        )
        .unwrap();
    }

    /// Runs the CLI as the seed's CI does: BETTER_COMPUTE_URL and BETTER_COMPUTE_TOKEN set.
    fn cli(&self, args: &[&str]) -> Run {
        let url = self.server.url("");
        self.cli_with(
            args,
            &[
                ("BETTER_COMPUTE_URL", &url),
                ("BETTER_COMPUTE_TOKEN", &self.key),
            ],
        )
    }

    /// Runs the CLI with exactly `vars` as its `BETTER_COMPUTE_*` variables.
    fn cli_with(&self, args: &[&str], vars: &[(&str, &str)]) -> Run {
        self.cli_configured(args, vars, |_| {})
    }

    /// Like [`Deployment::cli_with`], letting `configure` change the command (its streams).
    fn cli_configured(
        &self,
        args: &[&str],
        vars: &[(&str, &str)],
        configure: impl FnOnce(&mut Command),
    ) -> Run {
        let mut command = Command::new(common::binary());
        command.args(args).current_dir(self.dir.path());
        for (name, _) in std::env::vars() {
            if name.starts_with("BETTER_COMPUTE_") || name == "NO_COLOR" || name == "CLICOLOR_FORCE"
            {
                command.env_remove(name);
            }
        }
        command
            .env("HOME", self.dir.path())
            .env_remove("XDG_CONFIG_HOME");
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

    /// Runs the CLI as [`Deployment::cli`] does, with standard output on a full disk.
    fn cli_to_full_disk(&self, args: &[&str]) -> Run {
        let url = self.server.url("");
        let vars = [
            ("BETTER_COMPUTE_URL", url.as_str()),
            ("BETTER_COMPUTE_TOKEN", self.key.as_str()),
        ];
        self.cli_configured(args, &vars, |command| {
            let full = std::fs::File::create("/dev/full").expect("/dev/full");
            command.stdout(Stdio::from(full));
        })
    }

    /// `POST /api/<method>` as the administrator: the output, or `CODE: message`.
    fn api(&self, method: &str, input: Value) -> Result<Value, String> {
        let response = self
            .http
            .post(self.server.url(&format!("/api/{method}")))
            .bearer_auth(&self.key)
            .json(&input)
            .send()
            .unwrap();
        let ok = response.status().is_success();
        let body: Value = response.json().unwrap();
        if ok {
            Ok(body)
        } else {
            Err(format!(
                "{}: {}",
                body["error"]["code"], body["error"]["message"]
            ))
        }
    }

    /// Someone edits the pool `vps-fra` by hand during an incident.
    fn hand_edit_policy(&self, budget: f64) {
        let export = self
            .api("fleet.export", json!({ "tenantId": "root" }))
            .unwrap();
        let pool = export["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["kind"] == "pool" && o["name"] == "vps-fra")
            .expect("vps-fra in the export")
            .clone();
        self.api(
            "pool.update",
            json!({
                "tenantId": "root",
                "id": pool["id"],
                "ifRevision": pool["revision"],
                "policy": { "disruptionBudget": budget }
            }),
        )
        .expect("pool.update by hand");
    }

    /// The status once the drift check has run after `since` (ms): `fleet.check` when the
    /// server has it, else the reconciler (the server runs with a short `--drift-every`).
    fn checked_status(&self, since: u64) -> Value {
        let _ = self.api("fleet.check", json!({ "tenantId": "root" }));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let status = self
                .api("fleet.status", json!({ "tenantId": "root" }))
                .unwrap();
            if status["applied"]["checkedAt"]
                .as_u64()
                .is_some_and(|at| at >= since)
            {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "no drift check after {since}: {status}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

const SEED_LINES: &str = "\
~ pool vps-fra (policy)
~ ownerQuota vps-fra:gpu (max)
+ offer vps-fra -> globex
+ flavor vps-fra/g1.large
2 to create, 2 to update, 0 to delete, 5 unchanged.
";

fn plan_hash_of(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|line| line.strip_prefix("planHash: "))
        .unwrap_or_else(|| panic!("no planHash line in:\n{stdout}"))
        .to_owned()
}

#[test]
fn export_plan_apply_status_as_the_seed_documents_them() {
    let d = Deployment::start(&[]);
    d.write("base.json", &seed_before_review());

    // Review first: apply without --yes prints the plan and how to apply it, changes nothing.
    let review = d.cli(&["fleet", "apply", "base.json", "--tenant", "root"]);
    assert_eq!(review.code, 0, "{review:?}");
    let base_hash = plan_hash_of(&review.stdout);
    assert_eq!(
        review.stdout,
        format!(
            "+ site fra\n\
             + providerAccount cloud\n\
             + pool burst\n\
             + pool vps-fra\n\
             + ownerQuota vps-fra:gpu\n\
             + offer vps-fra -> acme\n\
             + flavor vps-fra/g1.small\n\
             7 to create, 0 to update, 0 to delete, 0 unchanged.\n\
             planHash: {base_hash}\n\
             Nothing was applied. To apply this exact plan: \
             better-compute fleet apply base.json --tenant root --plan-hash {base_hash}\n"
        )
    );
    let never = d.cli(&["fleet", "status", "--tenant", "root"]);
    assert_eq!(
        (never.code, never.stdout.as_str()),
        (
            0,
            "Tenant root has never applied a document: there is nothing to check drift against.\n"
        )
    );

    // Apply exactly the reviewed plan.
    let applied = d.cli(&[
        "fleet",
        "apply",
        "base.json",
        "--tenant",
        "root",
        "--plan-hash",
        &base_hash,
    ]);
    assert_eq!(applied.code, 0, "{applied:?}");
    assert!(
        applied
            .stdout
            .ends_with("7 to create, 0 to update, 0 to delete, 0 unchanged.\nApplied 7 calls.\n"),
        "{}",
        applied.stdout
    );

    // Export: pretty JSON to a file (and the whole answer for offline planning); never over
    // an existing file; to stdout without --out.
    let export = d.cli(&[
        "fleet",
        "export",
        "--tenant",
        "root",
        "--out",
        "fleet.json",
        "--state",
        "export.json",
    ]);
    assert_eq!(export.code, 0, "{export:?}");
    assert_eq!(export.stdout, "");
    assert_eq!(
        export.stderr,
        "Wrote tenant root's fleet to fleet.json and its export to export.json.\n"
    );
    // The state alone: the document on standard output, the file named on standard error.
    let state_only = d.cli(&[
        "fleet",
        "export",
        "--tenant",
        "root",
        "--state",
        "state.json",
    ]);
    assert_eq!(state_only.code, 0, "{state_only:?}");
    assert_eq!(
        state_only.stderr,
        "Wrote tenant root's export to state.json.\n"
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&state_only.stdout).unwrap(),
        serde_json::from_str::<serde_json::Value>(
            &std::fs::read_to_string(d.path("state.json")).unwrap()
        )
        .unwrap()["config"]
    );
    let written = std::fs::read_to_string(d.path("fleet.json")).unwrap();
    let answer = d
        .api("fleet.export", json!({ "tenantId": "root" }))
        .unwrap();
    assert_eq!(
        written,
        format!(
            "{}\n",
            serde_json::to_string_pretty(&answer["config"]).unwrap()
        )
    );
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(d.path("export.json")).unwrap()).unwrap();
    assert_eq!(state, answer);
    let stdout_export = d.cli(&["fleet", "export", "--tenant", "root"]);
    assert_eq!(
        (stdout_export.code, stdout_export.stdout.as_str()),
        (0, written.as_str())
    );
    let again = d.cli(&["fleet", "export", "--tenant", "root", "--out", "fleet.json"]);
    assert_eq!(again.code, 1);
    assert_eq!(
        again.stderr,
        "error: fleet.json already exists; refusing to overwrite it (remove it or choose another file)\n"
    );
    // A URL with a path of its own reaches no method: the server says so in its envelope.
    let url = format!("{}/api", d.server.url(""));
    let wrong = d.cli_with(
        &["fleet", "export", "--tenant", "root"],
        &[
            ("BETTER_COMPUTE_URL", &url),
            ("BETTER_COMPUTE_TOKEN", &d.key),
        ],
    );
    assert_eq!(wrong.code, 1, "{wrong:?}");
    assert!(
        wrong
            .stderr
            .starts_with("error: NOT_FOUND: /api/api/fleet.export is not an API path"),
        "{}",
        wrong.stderr
    );
    // An export that cannot write its second file leaves neither behind.
    let failed = d.cli(&[
        "fleet",
        "export",
        "--tenant",
        "root",
        "--out",
        "part.json",
        "--state",
        "no-such-folder/export.json",
    ]);
    assert_eq!(failed.code, 1, "{failed:?}");
    assert!(
        failed.stderr.contains("no-such-folder/export.json"),
        "{}",
        failed.stderr
    );
    assert!(!d.path("part.json").exists(), "part.json was left behind");

    // Export, then plan with prune: nothing to do, and apply does not call fleet.apply.
    let same = d.cli(&[
        "fleet",
        "plan",
        "fleet.json",
        "--tenant",
        "root",
        "--prune",
        "--fail-on-drift",
    ]);
    assert_eq!(same.code, 0, "{same:?}");
    assert!(
        same.stdout
            .starts_with("0 to create, 0 to update, 0 to delete, 7 unchanged.\nplanHash: "),
        "{}",
        same.stdout
    );
    let noop = d.cli(&[
        "fleet",
        "apply",
        "fleet.json",
        "--tenant",
        "root",
        "--prune",
        "--yes",
    ]);
    assert_eq!(noop.code, 0, "{noop:?}");
    let noop_hash = noop
        .stdout
        .trim_end()
        .rsplit(' ')
        .next()
        .unwrap()
        .to_owned();
    assert_eq!(
        noop.stdout,
        format!(
            "0 to create, 0 to update, 0 to delete, 7 unchanged.\n\
             Nothing to apply: fleet.apply was not called, so the drift baseline is unchanged.\n\
             To record this document as the drift baseline anyway: \
             better-compute fleet apply fleet.json --tenant root --prune --plan-hash {noop_hash}\n"
        )
    );
    let status = d
        .api("fleet.status", json!({ "tenantId": "root" }))
        .unwrap();
    assert_eq!(
        status["applied"]["planHash"],
        base_hash.as_str(),
        "not re-recorded: {status}"
    );
    assert_eq!(status["applied"]["prune"], false);
    // --plan-hash records an unchanged document as the new baseline.
    let baseline = d.cli(&[
        "fleet",
        "apply",
        "fleet.json",
        "--tenant",
        "root",
        "--prune",
        "--plan-hash",
        &noop_hash,
    ]);
    assert_eq!(baseline.code, 0, "{baseline:?}");
    assert!(
        baseline
            .stdout
            .ends_with("Applied 0 calls: recorded the document as the drift baseline.\n"),
        "{}",
        baseline.stdout
    );
    let status = d
        .api("fleet.status", json!({ "tenantId": "root" }))
        .unwrap();
    assert_eq!(status["applied"]["prune"], true, "{status}");

    // The seed's plan, on the server and offline against the saved export: same lines, same
    // planHash, same calls.
    d.write("reviewed.json", &seed_reviewed());
    let online = d.cli(&["fleet", "plan", "reviewed.json", "--tenant", "root"]);
    assert_eq!(online.code, 0, "{online:?}");
    let hash = plan_hash_of(&online.stdout);
    assert_eq!(online.stdout, format!("{SEED_LINES}planHash: {hash}\n"));
    let offline = d.cli_with(
        &["fleet", "plan", "reviewed.json", "--state", "export.json"],
        &[],
    );
    assert_eq!(offline.code, 0, "{offline:?}");
    assert_eq!(offline.stdout, online.stdout);
    let calls_online = d.cli(&[
        "fleet",
        "plan",
        "reviewed.json",
        "--tenant",
        "root",
        "--calls",
    ]);
    let calls_offline = d.cli_with(
        &[
            "fleet",
            "plan",
            "reviewed.json",
            "--state",
            "export.json",
            "--calls",
        ],
        &[],
    );
    assert_eq!(calls_online.stdout, calls_offline.stdout);
    assert!(
        calls_online.stdout.contains("Calls (4):\n  pool.update {"),
        "{}",
        calls_online.stdout
    );
    let as_json = d.cli(&[
        "fleet",
        "plan",
        "reviewed.json",
        "--tenant",
        "root",
        "--output",
        "json",
    ]);
    let plan: Value = serde_json::from_str(&as_json.stdout).unwrap();
    let server_plan = d
        .api(
            "fleet.plan",
            json!({ "tenantId": "root", "config": seed_reviewed(), "prune": false }),
        )
        .unwrap();
    assert_eq!(plan, server_plan);
    assert_eq!(plan["planHash"], hash.as_str());

    let drifted = d.cli(&[
        "fleet",
        "plan",
        "reviewed.json",
        "--tenant",
        "root",
        "--fail-on-drift",
    ]);
    assert_eq!(drifted.code, 1);
    assert_eq!(
        drifted.stderr,
        "error: FLEET_DRIFTED: 4 calls would run: the fleet does not match reviewed.json\n"
    );

    // A hand edit after the review: the reviewed plan is refused with CONFIG_DRIFT, and the
    // CLI shows what the plan became.
    d.hand_edit_policy(0.3);
    let stale = d.cli(&[
        "fleet",
        "apply",
        "reviewed.json",
        "--tenant",
        "root",
        "--plan-hash",
        &hash,
    ]);
    assert_eq!(stale.code, 1, "{stale:?}");
    assert!(
        stale.stderr.starts_with("error: CONFIG_DRIFT: "),
        "{}",
        stale.stderr
    );
    assert!(
        stale
            .stdout
            .starts_with("The plan is not the reviewed one (the fleet moved since the review, or the document or --prune differ); the plan is now:\n"),
        "{}",
        stale.stdout
    );
    assert!(stale.stdout.contains(SEED_LINES), "{}", stale.stdout);
    let moved_hash = plan_hash_of(&stale.stdout);
    assert_ne!(moved_hash, hash);

    // --yes applies what it just planned.
    let yes = d.cli(&[
        "fleet",
        "apply",
        "reviewed.json",
        "--tenant",
        "root",
        "--yes",
    ]);
    assert_eq!(yes.code, 0, "{yes:?}");
    assert_eq!(yes.stdout, format!("{SEED_LINES}Applied 4 calls.\n"));
    let clean = d.cli(&[
        "fleet",
        "plan",
        "reviewed.json",
        "--tenant",
        "root",
        "--fail-on-drift",
    ]);
    assert_eq!(clean.code, 0, "{clean:?}");

    // Status: who applied and when, in ISO-8601 UTC.
    let status = d.cli(&["fleet", "status", "--tenant", "root"]);
    assert_eq!(status.code, 0, "{status:?}");
    let raw = d
        .api("fleet.status", json!({ "tenantId": "root" }))
        .unwrap();
    let lines: Vec<&str> = status.stdout.lines().collect();
    assert_eq!(lines[0], "Tenant: root");
    let applied_line = lines[1];
    assert!(
        applied_line.starts_with(&format!(
            "Applied: by {} at 20",
            raw["applied"]["appliedBy"].as_str().unwrap()
        )),
        "{applied_line}"
    );
    assert!(applied_line.ends_with('Z'), "{applied_line}");
    assert_eq!(
        lines[2],
        format!("planHash: {}", raw["applied"]["planHash"].as_str().unwrap())
    );
    let json_status = d.cli(&["fleet", "status", "--tenant", "root", "--output", "json"]);
    assert_eq!(
        serde_json::from_str::<Value>(&json_status.stdout).unwrap(),
        raw
    );
    let acme = d.cli(&["fleet", "status", "--tenant", "acme", "--fail-on-drift"]);
    assert_eq!(
        (acme.code, acme.stdout.as_str()),
        (
            0,
            "Tenant acme has never applied a document: there is nothing to check drift against.\n"
        )
    );

    // Blocked plans exit PLAN_BLOCKED from plan and apply, with every change that does
    // something printed, the blocked one and the others alike, and the same error line.
    let mut blocked = seed_reviewed();
    blocked["pools"][0]["gpuModel"] = json!("H100");
    blocked["sites"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "name": "zrh", "kind": "shared", "region": "eu-central" }));
    d.write("blocked.json", &blocked);
    let mut printed = Vec::new();
    let stale = "0".repeat(64);
    for args in [
        &["fleet", "plan", "blocked.json", "--tenant", "root"][..],
        &[
            "fleet",
            "apply",
            "blocked.json",
            "--tenant",
            "root",
            "--yes",
        ][..],
    ] {
        let run = d.cli(args);
        assert_eq!(run.code, 1, "{run:?}");
        assert!(
            run.stdout.starts_with(
                "+ site zrh\n! ~ pool vps-fra (gpuModel) (blocked: gpuModel cannot change"
            ),
            "{}",
            run.stdout
        );
        assert_eq!(
            run.stderr,
            "error: PLAN_BLOCKED: the plan is blocked: 1 change cannot be applied (marked !); \
             fix the document\n"
        );
        let lines: Vec<String> = run
            .stdout
            .lines()
            .filter(|l| !l.starts_with("planHash: "))
            .map(str::to_owned)
            .collect();
        printed.push(lines);
    }
    assert!(printed.windows(2).all(|w| w[0] == w[1]), "{printed:#?}");
    // A stale reviewed hash is CONFIG_DRIFT even when the plan is now blocked: the review no
    // longer holds, whatever the plan became; the plan is printed after the reason.
    let run = d.cli(&[
        "fleet",
        "apply",
        "blocked.json",
        "--tenant",
        "root",
        "--plan-hash",
        &stale,
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.starts_with("error: CONFIG_DRIFT: "),
        "{}",
        run.stderr
    );
    let lines: Vec<String> = run
        .stdout
        .lines()
        .skip_while(|l| !l.ends_with("the plan is now:"))
        .skip(1)
        .filter(|l| !l.starts_with("planHash: "))
        .map(str::to_owned)
        .collect();
    assert_eq!(lines, printed[0], "{}", run.stdout);
    assert_eq!(
        d.cli(&[
            "fleet",
            "plan",
            "reviewed.json",
            "--tenant",
            "root",
            "--fail-on-drift"
        ])
        .code,
        0
    );
}

#[test]
fn the_seeds_ci_workflow_replayed() {
    let d = Deployment::start(&[]);
    d.write("fleet.json", &seed_reviewed());
    let first = d.cli(&["fleet", "apply", "fleet.json", "--tenant", "root", "--yes"]);
    assert_eq!(first.code, 0, "{first:?}");
    assert!(
        first.stdout.ends_with("Applied 9 calls.\n"),
        "{}",
        first.stdout
    );

    // Pull request: production matches the reviewed document.
    let step = [
        "fleet",
        "plan",
        "fleet.json",
        "--tenant",
        "root",
        "--fail-on-drift",
    ];
    let pr = d.cli(&step);
    assert_eq!(pr.code, 0, "{pr:?}");

    // Someone edits a pool by hand: the same step now fails with FLEET_DRIFTED.
    d.hand_edit_policy(0.5);
    let pr = d.cli(&step);
    assert_eq!(pr.code, 1, "{pr:?}");
    assert!(pr.stdout.starts_with("~ pool vps-fra (policy)\n0 to create, 1 to update, 0 to delete, 8 unchanged.\nplanHash: "), "{}", pr.stdout);
    assert_eq!(
        pr.stderr,
        "error: FLEET_DRIFTED: 1 call would run: the fleet does not match fleet.json\n"
    );

    // A tool reviewing the apply gets the plan as JSON, and nothing else on stdout.
    let json = ["--output", "json"];
    let apply = ["fleet", "apply", "fleet.json", "--tenant", "root"];
    let review = d.cli(&[&apply[..], &json].concat());
    assert_eq!(review.code, 0, "{review:?}");
    let plan: Value = serde_json::from_str(&review.stdout).expect("the plan as JSON");
    assert_eq!(plan["summary"]["update"], 1);
    assert_eq!(plan["calls"][0]["method"], "pool.update");
    let hash = plan["planHash"].as_str().unwrap().to_owned();

    // Merge: apply --yes puts production back.
    let merge = d.cli(&["fleet", "apply", "fleet.json", "--tenant", "root", "--yes"]);
    assert_eq!(merge.code, 0, "{merge:?}");
    assert_eq!(
        merge.stdout,
        "~ pool vps-fra (policy)\n0 to create, 1 to update, 0 to delete, 8 unchanged.\nApplied 1 call.\n"
    );
    assert_eq!(d.cli(&step).code, 0);

    // As JSON, an apply answers {plan, applied}: nothing to run after the merge, and the
    // reviewed hash is now stale (CONFIG_DRIFT on stderr, nothing on stdout).
    let again = d.cli(&[&apply[..], &["--yes"], &json].concat());
    assert_eq!(again.code, 0, "{again:?}");
    let answer: Value = serde_json::from_str(&again.stdout).expect("the answer as JSON");
    assert_eq!(
        (answer["applied"].clone(), answer["plan"]["calls"].clone()),
        (json!(0), json!([]))
    );
    let stale = d.cli(&[&apply[..], &["--plan-hash", &hash], &json].concat());
    assert_eq!(stale.code, 1, "{stale:?}");
    assert_eq!(stale.stdout, "");
    assert!(stale.stderr.contains("CONFIG_DRIFT"), "{}", stale.stderr);
    d.hand_edit_policy(0.25);
    let fixed = d.cli(&[&apply[..], &["--yes"], &json].concat());
    let answer: Value = serde_json::from_str(&fixed.stdout).expect("the answer as JSON");
    assert_eq!(answer["applied"], 1, "{fixed:?}");
    assert_eq!(answer["plan"]["calls"][0]["method"], "pool.update");
}

/// The scheduled `fleet status --fail-on-drift` between CI runs: it fails while the last
/// drift check found a hand edit, shows it by kind, and passes once an apply fixed it.
#[test]
fn status_reports_drift_until_an_apply_fixes_it() {
    let d = Deployment::start(&["--drift-every", "1s"]);
    d.write("fleet.json", &seed_reviewed());
    let first = d.cli(&["fleet", "apply", "fleet.json", "--tenant", "root", "--yes"]);
    assert_eq!(first.code, 0, "{first:?}");
    let raw = d.checked_status(now_ms());
    let status = d.cli(&["fleet", "status", "--tenant", "root", "--fail-on-drift"]);
    assert_eq!(status.code, 0, "{status:?} {raw}");
    assert!(
        status
            .stdout
            .contains("Drift: none, the fleet matches the applied document.\n"),
        "{}",
        status.stdout
    );

    let edited_at = now_ms();
    d.hand_edit_policy(0.5);
    // The scheduled status check sees it too, by kind.
    let raw = d.checked_status(edited_at);
    assert!(raw["drift"].is_object(), "{raw}");
    let status = d.cli(&["fleet", "status", "--tenant", "root", "--fail-on-drift"]);
    assert_eq!(status.code, 1, "{status:?}");
    assert!(status.stdout.contains("Drift: the fleet has drifted from the applied document:\n  pool:\n    ~ pool vps-fra (policy)\n"), "{}", status.stdout);
    assert!(status.stderr.starts_with("error: FLEET_DRIFTED: tenant root's fleet has drifted from the applied document (1 change as of 20"), "{}", status.stderr);
    // --diff: the live value, then the document's.
    let status = d.cli(&["fleet", "status", "--tenant", "root", "--diff"]);
    assert_eq!(status.code, 0, "{status:?}");
    assert!(
        status.stdout.contains(
            "    ~ pool vps-fra (policy)\n        policy: {\"disruptionBudget\":0.5} -> {\"disruptionBudget\":0.1}\n"
        ),
        "{}",
        status.stdout
    );

    let merge = d.cli(&["fleet", "apply", "fleet.json", "--tenant", "root", "--yes"]);
    assert_eq!(merge.code, 0, "{merge:?}");
    let raw = d.checked_status(now_ms());
    let status = d.cli(&["fleet", "status", "--tenant", "root", "--fail-on-drift"]);
    assert_eq!(status.code, 0, "{status:?} {raw}");
    assert!(
        status
            .stdout
            .contains("Drift: none, the fleet matches the applied document.\n"),
        "{}",
        status.stdout
    );
}

#[test]
fn connection_errors_and_precedence() {
    let d = Deployment::start(&[]);
    let url = d.server.url("");

    // A wrong key is the server's UNAUTHENTICATED, exit 1.
    let run = d.cli_with(
        &["fleet", "status", "--tenant", "root"],
        &[
            ("BETTER_COMPUTE_URL", &url),
            ("BETTER_COMPUTE_TOKEN", "not-a-key"),
        ],
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.starts_with("error: UNAUTHENTICATED: "),
        "{}",
        run.stderr
    );

    // --url beats BETTER_COMPUTE_URL.
    let run = d.cli_with(
        &["fleet", "status", "--tenant", "root", "--url", &url],
        &[
            ("BETTER_COMPUTE_URL", "http://127.0.0.1:9"),
            ("BETTER_COMPUTE_TOKEN", &d.key),
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");

    // The configuration file, default location and --config.
    let config = format!("url = \"{url}\"\ntoken = \"{}\"\n", d.key);
    std::fs::create_dir_all(d.path(".config/better-compute")).unwrap();
    std::fs::write(d.path(".config/better-compute/config.toml"), &config).unwrap();
    let run = d.cli_with(&["fleet", "status", "--tenant", "root"], &[]);
    assert_eq!(run.code, 0, "{run:?}");
    std::fs::remove_file(d.path(".config/better-compute/config.toml")).unwrap();
    std::fs::write(d.path("ci.toml"), &config).unwrap();
    let run = d.cli_with(
        &["fleet", "status", "--tenant", "root", "--config", "ci.toml"],
        &[],
    );
    assert_eq!(run.code, 0, "{run:?}");
    // Variables beat the file.
    let run = d.cli_with(
        &["fleet", "status", "--tenant", "root", "--config", "ci.toml"],
        &[("BETTER_COMPUTE_TOKEN", "not-a-key")],
    );
    assert_eq!(run.code, 1);

    // The --plan-hash command that apply prints keeps --url and --config, so run verbatim it
    // reaches the same server.
    d.write(
        "new-site.json",
        &json!({ "version": 1, "sites": [{ "name": "waw", "kind": "shared", "region": "eu-central" }] }),
    );
    let review = d.cli_with(
        &[
            "fleet",
            "apply",
            "new-site.json",
            "--tenant",
            "root",
            "--url",
            &url,
        ],
        &[("BETTER_COMPUTE_TOKEN", &d.key)],
    );
    assert_eq!(review.code, 0, "{review:?}");
    let command = review
        .stdout
        .lines()
        .last()
        .and_then(|line| line.strip_prefix("Nothing was applied. To apply this exact plan: "))
        .unwrap_or_else(|| panic!("{}", review.stdout))
        .to_owned();
    let hash = plan_hash_of(&review.stdout);
    assert_eq!(
        command,
        format!(
            "better-compute fleet apply new-site.json --tenant root --url {url} --plan-hash {hash}"
        )
    );
    let words: Vec<&str> = command.split(' ').skip(1).collect();
    let applied = d.cli_with(&words, &[("BETTER_COMPUTE_TOKEN", &d.key)]);
    assert_eq!(applied.code, 0, "{applied:?}");
    assert!(
        applied.stdout.ends_with("Applied 1 call.\n"),
        "{}",
        applied.stdout
    );

    // A tenant the server refuses is not the document's problem: no `FILE: path:` line.
    d.write("good.json", &json!({ "version": 1 }));
    let run = d.cli(&["fleet", "plan", "good.json", "--tenant", "Root!"]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "error: INVALID_INPUT: \"Root!\" is not a valid name: use 1 to 63 of a-z, 0-9, '.', '_' \
         or '-', starting with a lowercase letter or digit\n"
    );

    // A document the server refuses never gets that far: local validation lists it all.
    d.write("bad.json", &json!({ "version": 1, "pools": [{ "name": "p", "site": "fra", "class": "vps-host", "ownerQuota": { "gpu": -1 } }] }));
    let run = d.cli(&["fleet", "apply", "bad.json", "--tenant", "root", "--yes"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.starts_with("bad.json:") && run.stderr.contains(": pools[0].ownerQuota.gpu: "),
        "{}",
        run.stderr
    );
}

#[test]
fn missing_kinds_are_reported_on_stderr() {
    let d = Deployment::start(&["--vps", "false"]);
    let run = d.cli(&["fleet", "export", "--tenant", "root"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stderr,
        "warning: this deployment does not serve providerAccounts, flavors, sandboxTemplates; \
         the export leaves them out (missing)\n"
    );
    let config: Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(config.get("flavors").is_none(), "{config}");

    // A document with flavors plans as blocked there.
    let mut doc = seed_reviewed();
    doc.as_object_mut().unwrap().remove("providerAccounts");
    doc["pools"].as_array_mut().unwrap().pop();
    d.write("fleet.json", &doc);
    let run = d.cli(&["fleet", "plan", "fleet.json", "--tenant", "root"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout.contains("! + flavor vps-fra/g1.large (blocked: this deployment does not serve flavors (vps module))\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.starts_with("error: PLAN_BLOCKED: "),
        "{}",
        run.stderr
    );
}

/// A fleet grown past what a document may list (two applies without prune) exports as it is,
/// with a warning that the export is refused as a document.
#[test]
fn an_export_over_the_list_limit_says_so() {
    let d = Deployment::start(&[]);
    let sites = |range: std::ops::Range<usize>| {
        let sites: Vec<Value> = range
            .map(|i| json!({ "name": format!("s{i}"), "kind": "shared", "region": "eu" }))
            .collect();
        json!({ "tenantId": "acme", "prune": false, "config": { "version": 1, "sites": sites } })
    };
    d.api("fleet.apply", sites(0..1000)).unwrap();
    d.api("fleet.apply", sites(1000..1001)).unwrap();
    let run = d.cli(&["fleet", "export", "--tenant", "acme"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains("warning: sites has 1001 items, over the 1000 a document may list"),
        "{}",
        run.stderr
    );
    let config: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(config["sites"].as_array().unwrap().len(), 1001);
    // Under the limit, no warning.
    let run = d.cli(&["fleet", "export", "--tenant", "globex"]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
}

#[test]
fn a_key_with_a_trailing_newline_is_sent_without_it() {
    let d = Deployment::start(&[]);
    let url = d.server.url("");
    // As a key file written by `serve --admin-key-file` (or `echo`) or a CI secret holds it.
    let key = std::fs::read_to_string(d.path("admin.key")).unwrap();
    assert!(key.ends_with('\n'));
    let run = d.cli_with(
        &["fleet", "status", "--tenant", "root"],
        &[("BETTER_COMPUTE_URL", &url), ("BETTER_COMPUTE_TOKEN", &key)],
    );
    assert_eq!(run.code, 0, "{run:?}");
    std::fs::write(
        d.path("ci.toml"),
        format!("url = \"{url}\"\ntoken = {:?}\n", format!(" {key}")),
    )
    .unwrap();
    let run = d.cli_with(
        &["fleet", "status", "--tenant", "root", "--config", "ci.toml"],
        &[],
    );
    assert_eq!(run.code, 0, "{run:?}");
}

#[test]
fn output_that_cannot_be_written_is_an_error() {
    let d = Deployment::start(&[]);
    for args in [
        &["fleet", "export", "--tenant", "root"][..],
        &["fleet", "status", "--tenant", "root", "--output", "json"],
        &["fleet", "status", "--tenant", "root"],
    ] {
        let run = d.cli_to_full_disk(args);
        assert_eq!(run.code, 1, "{args:?}: {run:?}");
        assert!(
            run.stderr
                .starts_with("error: cannot write to standard output: "),
            "{args:?}: {run:?}"
        );
    }
}

/// A blocked plan ends with one `PLAN_BLOCKED` line, the CLI's, whether this CLI found it
/// blocked or the server did (a reviewed `--plan-hash` that still matches), in both output
/// modes; `(marked !)` only where the plan was printed with such marks.
#[test]
fn a_blocked_plan_has_one_error_line_in_both_output_modes() {
    let d = Deployment::start(&[]);
    d.write("current.json", &seed_before_review());
    let run = d.cli(&[
        "fleet",
        "apply",
        "current.json",
        "--tenant",
        "root",
        "--yes",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    // gpuModel cannot change: blocked, and a blocked change makes no call, so the reviewed
    // hash still matches at the apply.
    let mut blocked = seed_before_review();
    blocked["pools"][0]["gpuModel"] = json!("H100");
    d.write("blocked.json", &blocked);
    let marked = "error: PLAN_BLOCKED: the plan is blocked: 1 change cannot be applied \
                  (marked !); fix the document\n";
    let unmarked =
        "error: PLAN_BLOCKED: the plan is blocked: 1 change cannot be applied; fix the document\n";

    let review = d.cli(&[
        "fleet",
        "plan",
        "blocked.json",
        "--tenant",
        "root",
        "--output",
        "json",
    ]);
    assert_eq!((review.code, review.stderr.as_str()), (1, unmarked));
    let plan: Value = serde_json::from_str(&review.stdout).unwrap();
    let hash = plan["planHash"].as_str().unwrap().to_owned();
    let apply = ["fleet", "apply", "blocked.json", "--tenant", "root"];
    let by_hash = [&apply[..], &["--plan-hash", &hash]].concat();
    let json = ["--output", "json"];

    let run = d.cli(&by_hash);
    assert_eq!((run.code, run.stderr.as_str()), (1, marked), "{run:?}");
    assert!(
        run.stdout
            .starts_with("! ~ pool vps-fra (gpuModel) (blocked: "),
        "{}",
        run.stdout
    );
    for args in [
        [&by_hash[..], &json].concat(),
        [&apply[..], &["--yes"], &json].concat(),
    ] {
        let run = d.cli(&args);
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (1, "", unmarked),
            "{args:?}"
        );
    }
    let run = d.cli(&[&apply[..], &json].concat());
    assert_eq!((run.code, run.stderr.as_str()), (1, unmarked), "{run:?}");
}

#[test]
fn apply_yes_output_json_prints_nothing_on_a_blocked_plan() {
    let d = Deployment::start(&[]);
    d.write("current.json", &seed_before_review());
    let run = d.cli(&[
        "fleet",
        "apply",
        "current.json",
        "--tenant",
        "root",
        "--yes",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    // Blocked with no call to make (gpuModel cannot change), and blocked with calls too.
    let mut blocked = seed_before_review();
    blocked["pools"][0]["gpuModel"] = json!("H100");
    d.write("blocked.json", &blocked);
    blocked["sites"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "name": "waw", "kind": "shared", "region": "eu-central" }));
    d.write("blocked-calls.json", &blocked);
    for file in ["blocked.json", "blocked-calls.json"] {
        let args = [
            "fleet", "apply", file, "--tenant", "root", "--yes", "--output", "json",
        ];
        let run = d.cli(&args);
        assert_eq!(run.code, 1, "{file}: {run:?}");
        assert_eq!(run.stdout, "", "{file}");
        assert!(
            run.stderr.starts_with("error: PLAN_BLOCKED: "),
            "{file}: {run:?}"
        );
        // A review still prints its plan first.
        let run = d.cli(&[
            "fleet", "apply", file, "--tenant", "root", "--output", "json",
        ]);
        assert_eq!(run.code, 1, "{file}: {run:?}");
        let plan: Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(plan["summary"]["blocked"], true, "{file}: {plan}");
    }
}

#[test]
fn the_printed_plan_hash_command_protects_a_file_starting_with_a_dash() {
    let d = Deployment::start(&[]);
    d.write(
        "-site.json",
        &json!({ "version": 1, "sites": [{ "name": "waw", "kind": "shared", "region": "eu-central" }] }),
    );
    let review = d.cli(&["fleet", "apply", "--tenant", "root", "--", "-site.json"]);
    assert_eq!(review.code, 0, "{review:?}");
    let hash = plan_hash_of(&review.stdout);
    let command = review
        .stdout
        .lines()
        .last()
        .and_then(|line| line.strip_prefix("Nothing was applied. To apply this exact plan: "))
        .unwrap_or_else(|| panic!("{}", review.stdout))
        .to_owned();
    assert_eq!(
        command,
        format!("better-compute fleet apply ./-site.json --tenant root --plan-hash {hash}")
    );
    let words: Vec<&str> = command.split(' ').skip(1).collect();
    let applied = d.cli(&words);
    assert_eq!(applied.code, 0, "{applied:?}");
    assert!(
        applied.stdout.ends_with("Applied 1 call.\n"),
        "{}",
        applied.stdout
    );
}

/// A proxy on loopback in front of `backend`, one request per connection, that delivers
/// every request but drops the answer of `fleet.apply` (a load balancer timing out, a network
/// cut after the commit); answers its URL.
fn losing_apply_answers(backend: std::net::SocketAddr) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    // Serves until the test process ends.
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { continue };
            let Some(request) = common::read_http_message(&mut client) else {
                continue;
            };
            let mut upstream = TcpStream::connect(backend).unwrap();
            upstream.write_all(&request).unwrap();
            let Some(answer) = common::read_http_message(&mut upstream) else {
                continue;
            };
            if request.starts_with(b"POST /api/fleet.apply ") {
                continue;
            }
            let status_end = answer.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
            let _ = client.write_all(&answer[..status_end]);
            let _ = client.write_all(b"connection: close\r\n");
            let _ = client.write_all(&answer[status_end..]);
        }
    });
    url
}

#[test]
fn an_apply_whose_answer_is_lost_says_it_may_have_been_applied() {
    let d = Deployment::start(&[]);
    let proxy = losing_apply_answers(d.server.addr());
    d.write(
        "site.json",
        &json!({ "version": 1, "sites": [{ "name": "waw", "kind": "shared", "region": "eu-central" }] }),
    );
    let run = d.cli_with(
        &["fleet", "apply", "site.json", "--tenant", "root", "--yes"],
        &[
            ("BETTER_COMPUTE_URL", &proxy),
            ("BETTER_COMPUTE_TOKEN", &d.key),
        ],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.starts_with("error: no answer to fleet.apply (")
            && run.stderr.contains(
                "the outcome is unknown, the server may have applied it; \
                 `better-compute fleet status --tenant root` shows the last apply and \
                 `better-compute fleet plan site.json --tenant root` what is still to change\n"
            ),
        "{run:?}"
    );
    // It had: the status the message points to says so, and nothing is left to change.
    let status = d.cli(&["fleet", "status", "--tenant", "root"]);
    assert!(
        status.stdout.starts_with("Tenant: root\nApplied: by "),
        "{status:?}"
    );
    let plan = d.cli(&[
        "fleet",
        "plan",
        "site.json",
        "--tenant",
        "root",
        "--fail-on-drift",
    ]);
    assert_eq!(plan.code, 0, "{plan:?}");

    // Given with --url, the command it points to reaches the same server.
    d.write(
        "site2.json",
        &json!({ "version": 1, "sites": [{ "name": "krk", "kind": "shared", "region": "eu-central" }] }),
    );
    let run = d.cli_with(
        &[
            "fleet",
            "--url",
            &proxy,
            "apply",
            "site2.json",
            "--tenant",
            "root",
            "--yes",
        ],
        &[("BETTER_COMPUTE_TOKEN", &d.key)],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains(&format!(
            "`better-compute fleet status --tenant root --url {proxy}` shows the last apply"
        )),
        "{run:?}"
    );
}
