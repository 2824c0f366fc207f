//! The command line: parse raw flags, resolve them once, run one operation, map the outcome
//! to an exit code.
//!
//! - [`config`]: where the fleet commands connect (flag > variables > configuration file).
//! - [`client`]: the HTTP client all fleet commands share.
//! - [`fleet`]: one thin operation per fleet command.
//! - [`render`]: what they print, as pure functions.
//! - [`error`]: how a command ends and the one place that picks the exit code
//!   (0 success; 1 `PLAN_BLOCKED`, `CONFIG_DRIFT`, `FLEET_DRIFTED`, server and other errors;
//!   2 usage errors).

pub mod client;
pub mod config;
pub mod error;
pub mod fleet;
pub mod output;
pub mod render;

use clap::{Args, CommandFactory, FromArgMatches as _, Parser, Subcommand};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use client::Client;
use config::{Connection, ConnectionFlags};
use error::CliError;
use fleet::{Against, ApplyMode};
use render::Style;

/// better-compute: compute platform server and FleetConfig CLI.
#[derive(Debug, Parser)]
#[command(name = "better-compute", version = version(), about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the server (HTTP API and web console).
    #[command(after_help = "\
Examples:
  better-compute serve --console-dir dist --demo            # http://127.0.0.1:8080, data/fleet.db
  better-compute serve --listen 127.0.0.1:9000 --database postgres://user@localhost/fleet
  better-compute serve --config server.toml --admin-key-file admin.key

On an empty database it creates the root tenant and an administrator, and prints the
administrator's API key once (or writes it to --admin-key-file).")]
    Serve(crate::server::ServeArgs),
    /// Fleet as code: export, plan, apply, status, validate.
    Fleet(FleetArgs),
    /// Print a shell completion script.
    #[command(
        after_help = "Example:\n  better-compute completions bash > /etc/bash_completion.d/better-compute"
    )]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

const CONNECTION_HELP: &str = "\
Connection: the commands act as BETTER_COMPUTE_TOKEN against --url, else BETTER_COMPUTE_URL, \
else the configuration file (~/.config/better-compute/config.toml, or --config FILE) holding \
`url = \"...\"` and `token = \"...\"`.

Exit codes: 0 success; 1 PLAN_BLOCKED, CONFIG_DRIFT, FLEET_DRIFTED, INVALID_INPUT and server \
errors (printed as `error: CODE: message`); 2 usage errors.";

#[derive(Debug, Args)]
#[command(after_help = CONNECTION_HELP)]
struct FleetArgs {
    /// The server's URL (overrides BETTER_COMPUTE_URL and the configuration file).
    #[arg(long, global = true, value_name = "URL")]
    url: Option<String>,
    /// The configuration file [default: ~/.config/better-compute/config.toml].
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: FleetCommand,
}

#[derive(Debug, Subcommand)]
enum FleetCommand {
    /// Write the tenant's fleet as a document (refuses to overwrite a file).
    #[command(after_help = "\
Examples:
  better-compute fleet export --tenant root --out fleet.json
  better-compute fleet export --tenant root --out fleet.json --state export.json

Kinds the deployment does not serve are left out and reported on standard error.")]
    Export {
        /// The tenant whose fleet to export.
        #[arg(long)]
        tenant: String,
        /// Write the document to FILE instead of standard output (`-`: standard output); never
        /// overwrites a file.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Also write the whole export answer to FILE, for `fleet plan --state FILE`.
        #[arg(long, value_name = "FILE")]
        state: Option<PathBuf>,
    },
    /// Show what applying a document would change.
    #[command(after_help = "\
Examples:
  better-compute fleet plan fleet.json --tenant root
  better-compute fleet plan fleet.json --tenant root --prune --calls
  better-compute fleet plan fleet.json --tenant root --diff             # values too
  better-compute fleet plan fleet.json --tenant root --fail-on-drift    # in CI
  better-compute fleet plan fleet.json --state export.json              # offline

Prints one line per change that does something (+ create, ~ update with the differing fields,
- delete; a blocked change starts with `!` and ends with `(blocked: why)`), the counts, and
`planHash: <hash>` last. Exits 1 with PLAN_BLOCKED when blocked, and with FLEET_DRIFTED under
--fail-on-drift when any call would run.")]
    Plan {
        #[command(flatten)]
        document: DocumentArgs,
        /// The tenant (not needed with --state, which names its tenant).
        #[arg(long, required_unless_present = "state")]
        tenant: Option<String>,
        /// Plan offline against a saved export (`fleet export --state FILE`), no server.
        #[arg(long, value_name = "EXPORT.json")]
        state: Option<PathBuf>,
        /// List the calls fleet.apply would make (method and canonical input).
        #[arg(long)]
        calls: bool,
        /// Under each update, the values that differ: now -> in the document.
        #[arg(long)]
        diff: bool,
        /// Exit 1 with FLEET_DRIFTED when any call would run.
        #[arg(long)]
        fail_on_drift: bool,
        /// `text` for people, `json` for tools (the plan as the server answers it).
        #[arg(long, value_enum, default_value_t = Output::Text)]
        output: Output,
    },
    /// Apply a document: plan, print, then apply with --yes or --plan-hash.
    #[command(after_help = "\
Examples:
  better-compute fleet apply fleet.json --tenant root                    # review only
  better-compute fleet apply fleet.json --tenant root --plan-hash <hash> # apply that plan
  better-compute fleet apply fleet.json --tenant root --yes              # plan and apply
  better-compute fleet apply fleet.json --tenant root --yes --output json

Without --yes it prints the plan and the --plan-hash to apply that exact plan later. With
--plan-hash it fails with CONFIG_DRIFT if the fleet moved since. When nothing would change it
does not call fleet.apply, unless --plan-hash is given (which records the document as the
drift baseline).")]
    Apply {
        #[command(flatten)]
        document: DocumentArgs,
        /// The tenant.
        #[arg(long)]
        tenant: String,
        /// Apply what was just planned, without review.
        #[arg(long, conflicts_with = "plan_hash")]
        yes: bool,
        /// Apply the plan reviewed earlier, which had this planHash.
        #[arg(long, value_name = "HASH", value_parser = plan_hash)]
        plan_hash: Option<String>,
        /// Under each update, the values that differ: now -> in the document.
        #[arg(long)]
        diff: bool,
        /// `text` for people, `json` for tools: the plan when reviewing, else the apply's
        /// answer, `{plan, applied}`.
        #[arg(long, value_enum, default_value_t = Output::Text)]
        output: Output,
    },
    /// Show the applied document and the drift found by the last check.
    #[command(after_help = "\
Examples:
  better-compute fleet status --tenant root
  better-compute fleet status --tenant root --fail-on-drift    # scheduled in CI
  better-compute fleet status --tenant root --output json")]
    Status {
        /// The tenant.
        #[arg(long)]
        tenant: String,
        /// Exit 1 with FLEET_DRIFTED while the recorded drift is set.
        #[arg(long)]
        fail_on_drift: bool,
        /// Under each drifted update, the values that differ: live -> in the document.
        #[arg(long)]
        diff: bool,
        /// `text` for people, `json` for tools (the server's answer).
        #[arg(long, value_enum, default_value_t = Output::Text)]
        output: Output,
    },
    /// Validate documents offline (pre-commit hooks, CI): every problem, with its path.
    #[command(after_help = "\
Examples:
  better-compute fleet validate fleet.json
  better-compute fleet validate staging.json production.json

Prints `FILE:LINE:COLUMN: path: message` for every problem and exits 1 (INVALID_INPUT); exits 0 when valid.")]
    Validate {
        /// The documents (`-`: standard input, once).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
}

#[derive(Debug, Args)]
struct DocumentArgs {
    /// The fleet document (JSON); `-` reads standard input.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Delete what the document's lists leave out (sites are never deleted).
    #[arg(long)]
    prune: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Output {
    Text,
    Json,
}

/// The version, and the commit it was built from when the build was told
/// (`BETTER_COMPUTE_COMMIT`, which scripts/run and scripts/test set from git): `0.1.0
/// (6c193b6a0b1c)`. Operators tell builds apart by it (`--version`, the server's first log
/// line).
pub fn version() -> &'static str {
    static VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        let version = env!("CARGO_PKG_VERSION");
        match option_env!("BETTER_COMPUTE_COMMIT").filter(|c| !c.is_empty()) {
            Some(commit) => format!("{version} ({commit})"),
            None => version.to_owned(),
        }
    });
    &VERSION
}

/// Entry point of the binary: runs the command and returns its exit code.
pub fn main() -> ExitCode {
    let cli = parse();
    match cli.command {
        Command::Serve(args) => match crate::server::run(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                output::stderr(format_args!("error: {err:#}\n"));
                ExitCode::FAILURE
            }
        },
        Command::Completions { shell } => {
            // Into memory first: `generate` panics on a failed write (`| head -c1`).
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "better-compute", &mut script);
            if shell == clap_complete::Shell::Bash {
                script = bash_labels_fixed(&script);
            }
            error::exit(output::stdout_bytes(&script))
        }
        Command::Fleet(args) => error::exit(run_fleet(args)),
    }
}

/// clap_complete's bash script spells the state of a hyphenated program's subcommands two ways
/// (the loop sets `better__compute__subcmd__fleet`, the `case` arms read
/// `better__subcmd__compute__subcmd__fleet`), so nothing after the first word completed
/// (clap-rs/clap#6421, open): the arms are written as the loop spells them.
fn bash_labels_fixed(script: &[u8]) -> Vec<u8> {
    String::from_utf8_lossy(script)
        .replace("better__subcmd__compute", "better__compute")
        .into_bytes()
}

/// Parses the command line. An empty (or blank) variable counts as unset, as the fleet
/// commands count it: clap would hand `serve` the empty value, and `BETTER_COMPUTE_DEMO=`
/// stopped it with "a value is required".
fn parse() -> Cli {
    let command = Cli::command().mut_subcommand("serve", |serve| {
        let blank: Vec<clap::Id> = serve
            .get_arguments()
            .filter(|arg| {
                arg.get_env()
                    .and_then(std::env::var_os)
                    .is_some_and(|value| value.to_string_lossy().trim().is_empty())
            })
            .map(|arg| arg.get_id().clone())
            .collect();
        blank.into_iter().fold(serve, |serve, id| {
            serve.mut_arg(id, |arg| arg.env(None::<&'static str>))
        })
    });
    let mut command = command;
    let matches = match command.try_get_matches_from_mut(std::env::args_os()) {
        Ok(matches) => matches,
        Err(err) => match variable_of(&err, &command) {
            // clap names the flag (`--listen <LISTEN>`) even when the value came from its
            // variable: say which variable, so that the value is found where it was written.
            Some(variable) => {
                let text = err.render().to_string();
                let (what, rest) = text.split_once("\n\n").unwrap_or((text.trim_end(), ""));
                output::stderr(format_args!(
                    "{what}\n  (the value of the variable {variable})\n\n{rest}"
                ));
                std::process::exit(err.exit_code())
            }
            None => shown(err),
        },
    };
    let mut cli =
        Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.format(&mut command).exit());
    if let (Command::Serve(args), Some(serve)) =
        (&mut cli.command, matches.subcommand_matches("serve"))
    {
        args.from_variables = serve
            .ids()
            .filter(|id| {
                serve.value_source(id.as_str()) == Some(clap::parser::ValueSource::EnvVariable)
            })
            .map(|id| id.to_string())
            .collect();
    }
    if let Command::Fleet(_) = cli.command {
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        if let Some(flag) = repeated_connection_flag(&args) {
            command.build();
            let fleet = command
                .find_subcommand_mut("fleet")
                .expect("fleet is a subcommand");
            fleet
                .error(
                    clap::error::ErrorKind::ArgumentConflict,
                    format!(
                        "the argument '{flag}' cannot be used multiple times (after `fleet` \
                         or after its subcommand, once)"
                    ),
                )
                .exit();
        }
    }
    cli
}

/// The variable a refused `serve` value came from: clap refused the value of a flag that the
/// command line does not hold, and the flag's variable holds that value.
fn variable_of(err: &clap::Error, command: &clap::Command) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let text = |kind| match err.get(kind) {
        Some(ContextValue::String(text)) => Some(text.as_str()),
        _ => None,
    };
    let long = text(ContextKind::InvalidArg)?
        .split_whitespace()
        .next()?
        .strip_prefix("--")?;
    let value = text(ContextKind::InvalidValue)?;
    let variable = command
        .find_subcommand("serve")?
        .get_arguments()
        .find(|arg| arg.get_long() == Some(long))?
        .get_env()?
        .to_str()?;
    let flag = format!("--{long}");
    let on_command_line = std::env::args_os().any(|arg| {
        let arg = arg.to_string_lossy();
        arg == flag || arg.starts_with(&format!("{flag}="))
    });
    let holds = std::env::var(variable).is_ok_and(|v| v.trim() == value.trim());
    (holds && !on_command_line).then(|| variable.to_owned())
}

/// Ends the process for what clap stops at: help and the version are printed on standard
/// output, and a failed write there (a full disk) is an error (exit 1), as for every command;
/// other errors exit as clap has them (usage errors: 2).
fn shown(err: clap::Error) -> ! {
    use clap::error::ErrorKind;
    if !matches!(
        err.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    ) {
        err.exit();
    }
    match err.print() {
        Err(failed) if failed.kind() != std::io::ErrorKind::BrokenPipe => {
            output::stderr(format_args!(
                "error: cannot write to standard output: {failed}\n"
            ));
            std::process::exit(1)
        }
        _ => std::process::exit(0),
    }
}

/// `--url` or `--config` when given twice to a fleet command. clap refuses a repeat within
/// one level (`fleet status --url A --url B`) but lets the subcommand's silently win over
/// `fleet --url A status --url B`: both are refused alike. Counts the words before `--`.
fn repeated_connection_flag(args: &[std::ffi::OsString]) -> Option<&'static str> {
    let words: Vec<&str> = args
        .iter()
        .skip(1)
        .map(|arg| arg.to_str().unwrap_or(""))
        .take_while(|word| *word != "--")
        .collect();
    ["--url", "--config"].into_iter().find(|flag| {
        let given = |word: &&&str| {
            **word == *flag || word.strip_prefix(*flag).is_some_and(|v| v.starts_with('='))
        };
        words.iter().filter(given).count() > 1
    })
}

/// Resolves the fleet command's configuration once, then runs its operation.
/// `--plan-hash`: a planHash as `fleet plan` prints it; anything else is a usage error.
fn plan_hash(text: &str) -> Result<String, String> {
    if planner::PlanHash::is_well_formed(text) {
        Ok(text.to_owned())
    } else {
        Err("a planHash is 64 lowercase hexadecimal digits, as `fleet plan` prints it".to_owned())
    }
}

fn run_fleet(args: FleetArgs) -> Result<(), CliError> {
    let flags = ConnectionFlags {
        url: args.url,
        config: args.config,
    };
    // What `fleet apply` repeats in the command it prints, to reach the same server.
    let mut connection_args = Vec::new();
    if let Some(url) = &flags.url {
        connection_args.extend(["--url".to_owned(), url.clone()]);
    }
    if let Some(config) = &flags.config {
        connection_args.extend(["--config".to_owned(), config.display().to_string()]);
    }
    // `NO_COLOR` set to anything non-empty, UTF-8 or not, turns colour off.
    let env = |name: &str| std::env::var_os(name).map(|value| value.to_string_lossy().into_owned());
    let style = Style::detect(std::io::stdout().is_terminal(), env);
    let connect = || Client::new(Connection::resolve(&flags, |name| std::env::var_os(name))?);
    // The commands that connect to no server read --config all the same.
    let read_config = || flags.read_config();
    match args.command {
        FleetCommand::Export { tenant, out, state } => {
            fleet::export(connect, &fleet::ExportRequest { tenant, out, state })
        }
        FleetCommand::Plan {
            document,
            tenant,
            state,
            calls,
            diff,
            fail_on_drift,
            output,
        } => {
            let style = Style {
                values: diff,
                ..style
            };
            let against = match (state, tenant) {
                (Some(state), tenant) => Against::State(state, tenant),
                (None, Some(tenant)) => Against::Server(tenant),
                (None, None) => unreachable!("clap requires --tenant without --state"),
            };
            let request = fleet::PlanRequest {
                file: document.file,
                against,
                prune: document.prune,
                show_calls: calls,
                fail_on_drift,
                json: output == Output::Json,
            };
            fleet::plan(connect, read_config, &request, style)
        }
        FleetCommand::Apply {
            document,
            tenant,
            yes,
            plan_hash,
            diff,
            output,
        } => {
            let style = Style {
                values: diff,
                ..style
            };
            let mode = match (yes, plan_hash) {
                (_, Some(hash)) => ApplyMode::PlanHash(hash),
                (true, None) => ApplyMode::Yes,
                (false, None) => ApplyMode::Review,
            };
            let request = fleet::ApplyRequest {
                file: document.file,
                tenant,
                prune: document.prune,
                mode,
                connection_args,
                json: output == Output::Json,
            };
            fleet::apply(connect, &request, style)
        }
        FleetCommand::Status {
            tenant,
            fail_on_drift,
            diff,
            output,
        } => {
            let style = Style {
                values: diff,
                ..style
            };
            let request = fleet::StatusRequest {
                tenant,
                fail_on_drift,
                json: output == Output::Json,
            };
            fleet::status(&connect()?, &request, style)
        }
        FleetCommand::Validate { files } => fleet::validate(read_config, &files),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }
}
