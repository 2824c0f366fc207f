//! The command line: parse raw flags, resolve them once, run one operation, map the outcome
//! to an exit code.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// better-compute: compute platform server and FleetConfig CLI.
#[derive(Debug, Parser)]
#[command(name = "better-compute", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the server (HTTP API and web console).
    Serve(crate::server::ServeArgs),
    /// Fleet as code: export, plan, apply, status.
    #[command(subcommand)]
    Fleet(FleetCommand),
}

#[derive(Debug, Subcommand)]
enum FleetCommand {
    /// Write the tenant's fleet as a document.
    Export,
    /// Show what applying a document would change.
    Plan,
    /// Apply a document.
    Apply,
    /// Show the applied document's drift.
    Status,
}

/// Entry point of the binary: runs the command and returns its exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => match crate::server::run(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("error: {err:#}");
                ExitCode::FAILURE
            }
        },
        Command::Fleet(_) => {
            eprintln!("error: the fleet commands are not built yet");
            ExitCode::from(2)
        }
    }
}
