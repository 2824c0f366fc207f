//! The fleet commands, one thin operation each: read the inputs, call the server (or plan
//! offline), print, and say how it ended. Exit codes are decided in [`super::error::exit`].

use super::client::{ApiError, CallError, Client};
use super::error::{CliError, code};
use super::render::{self, Status, Style, count};
use planner::{Change, Document, Export, Plan, PlanOptions, Problem, Summary};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// `print!` that returns from the function with an error when standard output cannot be
/// written (a closed pipe, `| head`, is ignored: see [`super::output`]).
macro_rules! say {
    ($($arg:tt)*) => {
        super::output::stdout(format_args!($($arg)*))?
    };
}

/// `println!` as `say!`.
macro_rules! sayln {
    ($($arg:tt)*) => {
        say!("{}\n", format_args!($($arg)*))
    };
}

/// `eprintln!` that never panics: a message that cannot be written to standard error is lost,
/// and the exit code still tells (see [`super::output`]).
macro_rules! note {
    ($($arg:tt)*) => {
        super::output::stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// What `fleet export` needs.
#[derive(Debug)]
pub struct ExportRequest {
    /// The tenant whose fleet to export.
    pub tenant: String,
    /// Where the document goes; stdout when absent.
    pub out: Option<PathBuf>,
    /// Where the whole export answer goes (for `fleet plan --state`).
    pub state: Option<PathBuf>,
}

/// `fleet export`: the document as pretty JSON, never over an existing file; kinds the
/// deployment does not serve are reported on stderr.
pub fn export(
    connect: impl FnOnce() -> Result<Client, CliError>,
    request: &ExportRequest,
) -> Result<(), CliError> {
    if request.state.as_deref().is_some_and(is_stdin) {
        return Err(CliError::usage(
            "--state needs a file: standard output (-) carries the document",
        ));
    }
    // `--out -` is standard output, as without --out.
    let out = request.out.as_deref().filter(|path| !is_stdin(path));
    if let (Some(out), Some(state)) = (out, &request.state)
        && same_file(out, state)
    {
        return Err(CliError::usage(
            "--out and --state must name different files",
        ));
    }
    // Refuse before asking the server, so a mistake costs nothing.
    for path in [out, request.state.as_deref()].into_iter().flatten() {
        refuse_existing(path)?;
        check_folder(path)?;
    }
    let answer: Value = connect()?.call("fleet.export", &json!({ "tenantId": request.tenant }))?;
    let config = answer
        .get("config")
        .ok_or_else(|| CliError::failed("the answer of fleet.export has no config"))?;
    let missing: Vec<&str> = answer
        .get("missing")
        .and_then(Value::as_array)
        .map(|kinds| kinds.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !missing.is_empty() {
        note!(
            "warning: this deployment does not serve {}; the export leaves them out (missing)",
            missing.join(", ")
        );
    }
    for (list, items) in over_the_limit(config) {
        note!(
            "warning: {list} has {items} items, over the {} a document may list: this export \
             shows the fleet as it is, and is refused as a document until the fleet is smaller",
            planner::validate::MAX_ITEMS
        );
    }
    let mut files = Vec::new();
    if let Some(path) = out {
        files.push((path, pretty(config)));
    }
    if let Some(path) = request.state.as_deref() {
        files.push((path, pretty(&answer)));
    }
    // All or nothing: the files are written whole before the document goes to standard
    // output (a document there and then an error would look like success to a pipe), and
    // removed when anything fails (a file left behind would refuse the next attempt). Each is
    // written beside its target and moved in whole, so a process killed mid-write (a cancelled
    // CI job) leaves no cut file under the target's name.
    let mut created = Vec::new();
    let outcome: Result<(), CliError> = (|| {
        let written = files
            .iter()
            .map(|(path, text)| written_beside(path, text))
            .collect::<Result<Vec<_>, _>>()?;
        for ((path, _), file) in files.iter().zip(written) {
            // Never another's file: a name taken meanwhile is refused, and only what was
            // moved in here is removed on failure.
            file.persist_noclobber(path).map_err(|err| {
                if err.error.kind() == std::io::ErrorKind::AlreadyExists {
                    already_exists(path)
                } else {
                    CliError::failed(format!("cannot create {}: {}", path.display(), err.error))
                }
            })?;
            created.push(*path);
        }
        if out.is_none() {
            say!("{}", pretty(config));
        }
        Ok(())
    })();
    if outcome.is_err() {
        for path in &created {
            let _ = std::fs::remove_file(path);
        }
    }
    outcome?;
    // Each file written is named: a script that saved the state looks for it here too.
    let tenant = &request.tenant;
    match (out, request.state.as_deref()) {
        (Some(out), Some(state)) => note!(
            "Wrote tenant {tenant}'s fleet to {} and its export to {}.",
            out.display(),
            state.display()
        ),
        (Some(out), None) => note!("Wrote tenant {tenant}'s fleet to {}.", out.display()),
        (None, Some(state)) => note!("Wrote tenant {tenant}'s export to {}.", state.display()),
        (None, None) => {}
    }
    Ok(())
}

/// The lists of an exported config (a pool's offers among them) longer than a document may
/// hold, with their lengths: the live fleet may have grown past the limit by hand.
fn over_the_limit(config: &Value) -> Vec<(String, usize)> {
    let limit = planner::validate::MAX_ITEMS;
    let mut over = Vec::new();
    let lists = config.as_object().into_iter().flatten();
    for (key, value) in lists {
        let Some(items) = value.as_array() else {
            continue;
        };
        if items.len() > limit {
            over.push((key.clone(), items.len()));
        }
        for (i, item) in items.iter().enumerate() {
            if let Some(offers) = item.get("offers").and_then(Value::as_array)
                && offers.len() > limit
            {
                over.push((format!("{key}[{i}].offers"), offers.len()));
            }
        }
    }
    over
}

/// Where `fleet plan` and `fleet apply` plan against.
#[derive(Debug)]
pub enum Against {
    /// The server (`fleet.plan`) for this tenant.
    Server(String),
    /// A saved export (`fleet export --state`), offline; the tenant, when given, must be the
    /// export's.
    State(PathBuf, Option<String>),
}

/// What `fleet plan` needs.
#[derive(Debug)]
pub struct PlanRequest {
    /// The document.
    pub file: PathBuf,
    /// Where to plan.
    pub against: Against,
    /// Delete what the listed kinds leave out.
    pub prune: bool,
    /// List the calls.
    pub show_calls: bool,
    /// Fail with `FLEET_DRIFTED` when any call would run.
    pub fail_on_drift: bool,
    /// Print the plan as JSON.
    pub json: bool,
}

/// `fleet plan`: validates locally, plans on the server or against a saved export, prints
/// the changes; `PLAN_BLOCKED` when blocked, `FLEET_DRIFTED` (with `--fail-on-drift`) when any
/// call would run. Offline, `read_config` reads the `--config` file where `client` would have
/// (after the document: its mistakes come first either way).
pub fn plan(
    client: impl FnOnce() -> Result<Client, CliError>,
    read_config: impl FnOnce() -> Result<(), CliError>,
    request: &PlanRequest,
    style: Style,
) -> Result<(), CliError> {
    if let Against::State(path, _) = &request.against
        && is_stdin(path)
    {
        return Err(CliError::usage(
            "--state needs a file (fleet export --state FILE writes one); standard input (-) \
             is for the document",
        ));
    }
    let (document, raw, source) = read_document(&request.file)?;
    let plan = match &request.against {
        Against::State(path, tenant) => {
            read_config()?;
            let export = read_export(path)?;
            if let Some(tenant) = tenant.as_ref().filter(|t| **t != export.tenant_id) {
                return Err(CliError::usage(format!(
                    "--tenant {tenant} does not match {}, an export of tenant {}",
                    path.display(),
                    export.tenant_id
                )));
            }
            planner::plan(
                &document,
                &export,
                PlanOptions {
                    prune: request.prune,
                },
            )
        }
        Against::Server(tenant) => {
            let client = client()?;
            plan_on_server(&client, &source, tenant, &raw, request.prune)?
        }
    };
    if request.json {
        say!("{}", pretty(&plan));
    } else {
        say!("{}", render::plan(&plan, request.show_calls, style));
    }
    check_blocked(&plan, !request.json)?;
    if request.fail_on_drift && !plan.calls.is_empty() {
        return Err(CliError::coded(
            code::FLEET_DRIFTED,
            format!(
                "{} would run: the fleet does not match {}",
                count(plan.calls.len(), "call"),
                source.name
            ),
        ));
    }
    Ok(())
}

/// How `fleet apply` proceeds after planning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyMode {
    /// Print the plan and how to apply it; change nothing.
    Review,
    /// Apply what was just planned.
    Yes,
    /// Apply the plan reviewed earlier, which has this hash.
    PlanHash(String),
}

/// What `fleet apply` needs.
#[derive(Debug)]
pub struct ApplyRequest {
    /// The document.
    pub file: PathBuf,
    /// The tenant.
    pub tenant: String,
    /// Delete what the listed kinds leave out.
    pub prune: bool,
    /// Review, `--yes` or `--plan-hash`.
    pub mode: ApplyMode,
    /// The connection flags given on the command line (`--url`, `--config`), repeated in the
    /// printed `--plan-hash` command so that it reaches the same server.
    pub connection_args: Vec<String>,
    /// Print JSON for tools instead of text: the plan when reviewing, else `{plan, applied}`.
    pub json: bool,
}

/// The answer of `fleet.apply`.
#[derive(Debug, Deserialize, Serialize)]
struct Applied {
    plan: Plan,
    applied: u64,
}

/// `fleet apply`: plans and prints the changes; then stops with the `--plan-hash` to apply
/// later, applies what it planned (`--yes`), or applies a reviewed plan (`--plan-hash`).
/// The document is read before `client` connects: a file's mistake is reported as such,
/// whatever the connection settings.
pub fn apply(
    client: impl FnOnce() -> Result<Client, CliError>,
    request: &ApplyRequest,
    style: Style,
) -> Result<(), CliError> {
    let (_, raw, source) = read_document(&request.file)?;
    let client = &client()?;
    // Repeated in the commands it prints, so that they reach the same server.
    let connection: String = request
        .connection_args
        .iter()
        .map(|arg| format!(" {}", shell_word(arg)))
        .collect();
    // What to run when fleet.apply goes unanswered: both commands, ready to paste.
    let unanswered = format!(
        "`better-compute fleet status --tenant {tenant}{connection}` shows the last apply and \
         `better-compute fleet plan {file} --tenant {tenant}{prune}{connection}` what is still \
         to change",
        tenant = shell_word(&request.tenant),
        file = shell_word(&file_word(&request.file)),
        prune = if request.prune { " --prune" } else { "" },
    );
    let input = |plan_hash: &str| {
        json!({
            "tenantId": request.tenant,
            "config": raw,
            "prune": request.prune,
            "planHash": plan_hash,
        })
    };
    let planned = match &request.mode {
        // The server compares the reviewed hash inside its transaction: no plan first.
        ApplyMode::PlanHash(hash) => {
            return apply_call(
                client,
                &source,
                &input(hash),
                (Print::all(request.json), style),
                &unanswered,
            );
        }
        ApplyMode::Review | ApplyMode::Yes => {
            plan_on_server(client, &source, &request.tenant, &raw, request.prune)?
        }
    };
    if request.json {
        // Tools get one JSON document on standard output: the plan when reviewing (as
        // `fleet plan --output json` prints it, blocked or not), else what the apply answered;
        // nothing when `--yes` stops at a blocked plan.
        if request.mode == ApplyMode::Review {
            say!("{}", pretty(&planned));
        }
        check_blocked(&planned, false)?;
        return match request.mode {
            ApplyMode::Yes if !planned.calls.is_empty() => apply_call(
                client,
                &source,
                &input(&planned.plan_hash.0),
                (Print::Json, style),
                &unanswered,
            ),
            // Nothing to run: fleet.apply is not called, and nothing was applied.
            ApplyMode::Yes => {
                say!("{}", pretty(&json!({ "plan": &planned, "applied": 0 })));
                Ok(())
            }
            _ => Ok(()),
        };
    }
    say!(
        "{}",
        render::changes(&planned.changes, &planned.summary, style)
    );
    check_blocked(&planned, true)?;
    let later = format!(
        "better-compute fleet apply {} --tenant {}{}{connection} --plan-hash {}",
        shell_word(&file_word(&request.file)),
        shell_word(&request.tenant),
        if request.prune { " --prune" } else { "" },
        planned.plan_hash
    );
    if planned.calls.is_empty() {
        sayln!("Nothing to apply: fleet.apply was not called, so the drift baseline is unchanged.");
        sayln!("To record this document as the drift baseline anyway: {later}");
        return Ok(());
    }
    match request.mode {
        ApplyMode::Yes => apply_call(
            client,
            &source,
            &input(&planned.plan_hash.0),
            (Print::Outcome, style),
            &unanswered,
        ),
        _ => {
            sayln!("planHash: {}", planned.plan_hash);
            sayln!("Nothing was applied. To apply this exact plan: {later}");
            Ok(())
        }
    }
}

/// What [`apply_call`] prints on standard output.
#[derive(Clone, Copy, PartialEq)]
enum Print {
    /// The plan it ran (not printed before), then the outcome line.
    PlanAndOutcome,
    /// The outcome line.
    Outcome,
    /// The answer, `{plan, applied}`, as JSON; an error's plan is not printed.
    Json,
}

impl Print {
    fn all(json: bool) -> Print {
        if json {
            Print::Json
        } else {
            Print::PlanAndOutcome
        }
    }
}

/// Calls `fleet.apply`; prints the plan it ran when `print_plan` (not printed before), and on
/// `CONFIG_DRIFT` what the plan became. `unanswered` names the commands that tell what
/// happened when no answer comes.
fn apply_call(
    client: &Client,
    source: &Source,
    input: &Value,
    (print, style): (Print, Style),
    unanswered: &str,
) -> Result<(), CliError> {
    match client.call::<_, Applied>("fleet.apply", input) {
        // The request may have committed: saying it failed would invite a blind retry.
        Err(CallError::Unanswered { detail, .. }) => Err(CliError::failed(format!(
            "no answer to fleet.apply ({detail}): the outcome is unknown, the server may have \
             applied it; {unanswered}"
        ))),
        Ok(done) if print == Print::Json => {
            say!("{}", pretty(&done));
            Ok(())
        }
        Ok(done) => {
            if print == Print::PlanAndOutcome {
                say!(
                    "{}",
                    render::changes(&done.plan.changes, &done.plan.summary, style)
                );
            }
            if done.plan.calls.is_empty() {
                sayln!("Applied 0 calls: recorded the document as the drift baseline.");
            } else {
                sayln!("Applied {}.", count(done.applied as usize, "call"));
            }
            Ok(())
        }
        // As `fleet plan` does: the server's problems with the document, FILE:LINE:COLUMN.
        Err(CallError::Api(err)) if err.code == code::INVALID_INPUT => {
            print_problems_from(&err, source);
            Err(err.into())
        }
        // The same line as in text, from the plan in the details (not printed: standard output
        // stays empty on an error).
        Err(CallError::Api(err)) if print == Print::Json && err.code == code::PLAN_BLOCKED => {
            match serde_json::from_value::<PlanInError>(err.details.clone()) {
                Ok(plan) => Err(blocked_error(&plan.changes, false)),
                Err(_) => Err(err.into()),
            }
        }
        Err(err) if print == Print::Json => Err(err.into()),
        Err(CallError::Api(err)) if err.code == code::CONFIG_DRIFT => {
            print_plan_in(
                &err,
                Some(
                    "The plan is not the reviewed one (the fleet moved since the review, or the \
                     document or --prune differ); the plan is now:",
                ),
                style,
            )?;
            Err(err.into())
        }
        Err(CallError::Api(err)) if err.code == code::PLAN_BLOCKED => {
            // The plan as `fleet plan` prints it, then the same error line.
            match print_plan_in(&err, None, style)? {
                Some(plan) => Err(blocked_error(&plan.changes, true)),
                None => Err(err.into()),
            }
        }
        Err(err) => Err(err.into()),
    }
}

/// The plan a `CONFIG_DRIFT` or `PLAN_BLOCKED` answer's details carry.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PlanInError {
    plan_hash: String,
    #[serde(default)]
    changes: Vec<Change>,
    summary: Summary,
}

/// Prints the plan in an error's details, after `heading`, and answers it (`None` when the
/// details hold no plan).
fn print_plan_in(
    err: &ApiError,
    heading: Option<&str>,
    style: Style,
) -> Result<Option<PlanInError>, CliError> {
    let Ok(plan) = serde_json::from_value::<PlanInError>(err.details.clone()) else {
        return Ok(None);
    };
    if let Some(heading) = heading {
        sayln!("{heading}");
    }
    say!("{}", render::changes(&plan.changes, &plan.summary, style));
    sayln!("planHash: {}", plan.plan_hash);
    Ok(Some(plan))
}

/// What `fleet status` needs.
#[derive(Debug)]
pub struct StatusRequest {
    /// The tenant.
    pub tenant: String,
    /// Fail with `FLEET_DRIFTED` while the recorded drift is set.
    pub fail_on_drift: bool,
    /// Print the server's answer as JSON.
    pub json: bool,
}

/// `fleet status`: who applied, when, when checked, and the drift by kind.
pub fn status(client: &Client, request: &StatusRequest, style: Style) -> Result<(), CliError> {
    let answer: Value = client.call("fleet.status", &json!({ "tenantId": request.tenant }))?;
    let status: Status = serde_json::from_value(answer.clone()).map_err(|err| {
        CliError::failed(format!(
            "the answer of fleet.status is not what this CLI expects: {err}"
        ))
    })?;
    if request.json {
        say!("{}", pretty(&answer));
    } else {
        say!("{}", render::status(&status, style));
    }
    if request.fail_on_drift
        && let Some(drift) = status.drift_set()
    {
        let checked = status
            .applied
            .as_ref()
            .and_then(|applied| applied.checked_at)
            .map(render::timestamp)
            .unwrap_or_default();
        return Err(CliError::coded(
            code::FLEET_DRIFTED,
            format!(
                "tenant {}'s fleet has drifted from the applied document ({} as of {checked})",
                request.tenant,
                drift.extent()
            ),
        ));
    }
    Ok(())
}

/// `fleet validate`: every problem of every file, offline; `read_config` reads the `--config`
/// file first (a usage error before any file is read, as the command line's own).
pub fn validate(
    read_config: impl FnOnce() -> Result<(), CliError>,
    files: &[PathBuf],
) -> Result<(), CliError> {
    if files.iter().filter(|file| is_stdin(file)).count() > 1 {
        return Err(CliError::usage("standard input (-) can be read only once"));
    }
    read_config()?;
    let mut invalid = 0;
    for file in files {
        match read_document(file) {
            Ok((_, _, source)) => sayln!("{}: valid", source.name),
            Err(err) if files.len() == 1 => return Err(err),
            // Problems are printed by `read_document`; a file it cannot read or parse gets one
            // line, and the other files are still checked.
            Err(err) => {
                if err.code() != Some(code::INVALID_INPUT) {
                    note!("{err}");
                }
                invalid += 1;
            }
        }
    }
    if invalid > 0 {
        return Err(CliError::coded(
            code::INVALID_INPUT,
            format!("{} of {} files do not validate", invalid, files.len()),
        ));
    }
    Ok(())
}

/// The path that means standard input, as for most command-line tools.
fn is_stdin(file: &Path) -> bool {
    file == Path::new("-")
}

/// A document as read: the name messages give it (`<stdin>` for `-`) and its bytes, kept to
/// locate the server's problems in them (standard input cannot be read twice).
struct Source {
    name: String,
    bytes: Vec<u8>,
}

impl Source {
    fn read(file: &Path) -> Result<Source, CliError> {
        if is_stdin(file) {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut bytes)
                .map_err(|err| CliError::failed(format!("cannot read standard input: {err}")))?;
            return Ok(Source {
                name: "<stdin>".to_owned(),
                bytes,
            });
        }
        let bytes = std::fs::read(file)
            .map_err(|err| CliError::failed(format!("cannot read {}: {err}", file.display())))?;
        Ok(Source {
            name: file.display().to_string(),
            bytes,
        })
    }
}

/// Reads and validates a document (`-`: standard input): the typed document, the JSON as
/// written (which is what the server receives) and the source. Every problem is printed as
/// `FILE:LINE:COLUMN: path: message`.
fn read_document(file: &Path) -> Result<(Document<'static>, Value, Source), CliError> {
    let source = Source::read(file)?;
    let bytes = &source.bytes;
    let name = &source.name;
    match planner::validate(bytes) {
        Ok(document) => {
            let raw = serde_json::from_slice(bytes)
                .map_err(|err| CliError::failed(format!("{name} is not JSON: {err}")))?;
            Ok((document.into_owned(), raw, source))
        }
        // serde_json's "expected value at line 1 column 1" would not say what is wrong.
        Err(_) if bytes.starts_with(BOM) => {
            note!(
                "{name}:1:1: the document starts with a UTF-8 byte order mark; save it without one"
            );
            Err(CliError::coded(
                code::INVALID_INPUT,
                format!("{name} does not validate (1 problem)"),
            ))
        }
        Err(invalid) => {
            print_problems(&source, &invalid.problems);
            Err(CliError::coded(
                code::INVALID_INPUT,
                format!(
                    "{name} does not validate ({})",
                    count(invalid.problems.len(), "problem")
                ),
            ))
        }
    }
}

/// The UTF-8 byte order mark, which JSON may not start with (RFC 8259, 8.1).
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Prints each of a document's `problems` on standard error as `FILE:LINE:COLUMN: path:
/// message`, as compilers write it (editors jump there): the line and column of the value the
/// path names in the source (of its closest part that exists, for a missing field; of the
/// repeat, for a repeated key; of the document, for a problem of the whole document), without
/// them when the text has no such place; no `path: ` for the document's root, whose path is
/// empty.
fn print_problems(source: &Source, problems: &[Problem]) {
    // Lossy: text that is not UTF-8 is still located, the valid part before the first bad
    // byte being unchanged.
    let text = String::from_utf8_lossy(&source.bytes);
    let places = planner::locate::locate_problems(&text, problems);
    for (problem, at) in problems.iter().zip(places) {
        note!("{}", problem_line(&source.name, at, problem));
    }
}

/// `FILE:LINE:COLUMN: path: message` (`FILE: ...` without a place; no `path: ` for the root).
fn problem_line(name: &str, at: Option<planner::locate::Location>, problem: &Problem) -> String {
    let mut line = name.to_owned();
    if let Some(at) = at {
        line.push_str(&format!(":{}:{}", at.line, at.column));
    }
    if problem.path.is_empty() {
        format!("{line}: {}", problem.message)
    } else {
        format!("{line}: {}: {}", problem.path, problem.message)
    }
}

/// Prints the problems of a server's `INVALID_INPUT` (`details.problems`, else `details.path`)
/// that are the document's. A problem of the request itself (`tenantId` from `--tenant`) is
/// not the file's: the `error:` line alone says it.
fn print_problems_from(err: &ApiError, source: &Source) {
    let problems = err.details.get("problems").and_then(Value::as_array);
    let lines: Vec<(&str, &str)> = match problems {
        Some(problems) => problems
            .iter()
            .map(|problem| {
                (
                    problem.get("path").and_then(Value::as_str).unwrap_or(""),
                    problem.get("message").and_then(Value::as_str).unwrap_or(""),
                )
            })
            .collect(),
        None => err
            .details
            .get("path")
            .and_then(Value::as_str)
            .map(|path| vec![(path, err.message.as_str())])
            .unwrap_or_default(),
    };
    let problems: Vec<Problem> = lines
        .into_iter()
        .filter(|(path, _)| is_document_path(path))
        .map(|(path, message)| Problem {
            path: path.to_owned(),
            message: message.to_owned(),
        })
        .collect();
    print_problems(source, &problems);
}

/// Whether a problem's path is inside the document: its first step is one of the document's
/// keys (the server's paths of the request's own fields, `tenantId`, `prune`, are not).
fn is_document_path(path: &str) -> bool {
    const KEYS: [&str; 6] = [
        "version",
        "sites",
        "providerAccounts",
        "pools",
        "flavors",
        "sandboxTemplates",
    ];
    let first = path.split(['.', '[']).next().unwrap_or("");
    KEYS.contains(&first)
}

fn plan_on_server(
    client: &Client,
    source: &Source,
    tenant: &str,
    raw: &Value,
    prune: bool,
) -> Result<Plan, CliError> {
    let input = json!({ "tenantId": tenant, "config": raw, "prune": prune });
    client.call("fleet.plan", &input).map_err(|err| match err {
        CallError::Api(api) => {
            if api.code == code::INVALID_INPUT {
                print_problems_from(&api, source);
            }
            api.into()
        }
        err => err.into(),
    })
}

fn read_export(path: &Path) -> Result<Export<'static>, CliError> {
    let bytes = std::fs::read(path)
        .map_err(|err| CliError::failed(format!("cannot read {}: {err}", path.display())))?;
    let not_export = |why: String| {
        CliError::failed(format!(
            "{} is not a saved export (write one with `fleet export --state FILE`): {why}",
            path.display()
        ))
    };
    // Its path and place, counted as a document's (the column in characters).
    Export::from_json(&bytes)
        .map(Export::into_owned)
        .map_err(|err| not_export(err.to_string()))
}

/// `PLAN_BLOCKED` when `plan` is blocked; `marked` as for [`blocked_error`].
fn check_blocked(plan: &Plan, marked: bool) -> Result<(), CliError> {
    if !plan.is_blocked() {
        return Ok(());
    }
    Err(blocked_error(&plan.changes, marked))
}

/// `PLAN_BLOCKED` for a plan with these changes, whoever found it blocked (this CLI, or the
/// server on `--plan-hash`): one line in both output modes, which says `(marked !)` only when
/// the plan was printed as text (`marked`), its blocked lines starting with `!`.
fn blocked_error(changes: &[Change], marked: bool) -> CliError {
    let blocked = changes.iter().filter(|change| change.blocked).count();
    CliError::coded(
        code::PLAN_BLOCKED,
        format!(
            "the plan is blocked: {} cannot be applied{}; fix the document",
            count(blocked, "change"),
            if marked { " (marked !)" } else { "" }
        ),
    )
}

fn refuse_existing(path: &Path) -> Result<(), CliError> {
    match path.exists() {
        true => Err(already_exists(path)),
        false => Ok(()),
    }
}

/// `text` in a new hidden file beside `path` (`.NAME.XXXXXX.tmp`), synced, ready to be moved
/// in; dropped (so removed) on failure.
fn written_beside(path: &Path, text: &str) -> Result<tempfile::NamedTempFile, CliError> {
    let folder = match path.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => Path::new("."),
    };
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let cannot =
        |err: std::io::Error| CliError::failed(format!("cannot create {}: {err}", path.display()));
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    // A file as any other the user makes (0666 less the umask), not a temporary file's 0600.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut file = builder.tempfile_in(folder).map_err(cannot)?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.as_file().sync_all())
        .map_err(|err| CliError::failed(format!("writing {}: {err}", path.display())))?;
    Ok(file)
}

fn already_exists(path: &Path) -> CliError {
    CliError::failed(format!(
        "{} already exists; refusing to overwrite it (remove it or choose another file)",
        path.display()
    ))
}

/// The folder a new file goes in must exist: checked before asking the server. A path that
/// ends in `/` names a folder, never a new file.
fn check_folder(path: &Path) -> Result<(), CliError> {
    if path.as_os_str().as_encoded_bytes().ends_with(b"/") {
        return Err(CliError::failed(format!(
            "cannot create {}: it names a folder; give a file name",
            path.display()
        )));
    }
    let folder = match path.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => Path::new("."),
    };
    if folder.is_dir() {
        return Ok(());
    }
    Err(CliError::failed(format!(
        "cannot create {}: {} is not a folder",
        path.display(),
        folder.display()
    )))
}

/// Whether two paths name the same file: equal once `.` is dropped, or in the same
/// folder (as the file system resolves it: links, `..`) under the same name.
fn same_file(a: &Path, b: &Path) -> bool {
    fn lexical(path: &Path) -> PathBuf {
        path.components()
            .filter(|part| *part != std::path::Component::CurDir)
            .collect()
    }
    fn resolved(path: &Path) -> Option<(PathBuf, std::ffi::OsString)> {
        let folder = match path.parent() {
            Some(folder) if !folder.as_os_str().is_empty() => folder,
            _ => Path::new("."),
        };
        Some((folder.canonicalize().ok()?, path.file_name()?.to_owned()))
    }
    lexical(a) == lexical(b) || resolved(a).is_some_and(|a| Some(a) == resolved(b))
}

fn pretty<T: serde::Serialize + ?Sized>(value: &T) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("JSON values always serialize");
    text.push('\n');
    text
}

/// A document's path as a command's word: one starting with `-` gets `./`, else the command
/// would read it as a flag (`-` itself, standard input, stays).
fn file_word(file: &Path) -> String {
    let text = file.display().to_string();
    if text.starts_with('-') && !is_stdin(file) {
        format!("./{text}")
    } else {
        text
    }
}

/// A word as a POSIX shell reads it back: bare when safe, else single-quoted.
fn shell_word(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    if safe {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}
