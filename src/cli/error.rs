//! How a command ends, and the one place that turns that into an exit code.

use std::process::ExitCode;

/// Codes the CLI itself raises (the server's codes pass through as it sent them).
pub mod code {
    /// The document does not validate (also the server's code).
    pub const INVALID_INPUT: &str = "INVALID_INPUT";
    /// Some change of the plan cannot be applied.
    pub const PLAN_BLOCKED: &str = "PLAN_BLOCKED";
    /// The fleet moved since the reviewed plan (the server's code, from `fleet.apply`).
    pub const CONFIG_DRIFT: &str = "CONFIG_DRIFT";
    /// `--fail-on-drift`: calls would run, or the recorded drift is set.
    pub const FLEET_DRIFTED: &str = "FLEET_DRIFTED";
}

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The command line or its configuration is unusable (exit 2), like clap's own errors.
    #[error("{0}")]
    Usage(String),
    /// A failure with a code: the server's (`FORBIDDEN`, `CONFIG_DRIFT`, ...) or the CLI's own
    /// (`PLAN_BLOCKED`, `FLEET_DRIFTED`, `INVALID_INPUT`). Exit 1.
    #[error("{code}: {message}")]
    Coded {
        /// The error code, such as `PLAN_BLOCKED`.
        code: String,
        /// What happened, for a person.
        message: String,
    },
    /// Anything else that went wrong: a file, the network, an unreadable answer. Exit 1.
    #[error("{0}")]
    Failed(String),
}

impl CliError {
    /// A usage error (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        CliError::Usage(message.into())
    }

    /// A coded failure (exit 1).
    pub fn coded(code: &str, message: impl Into<String>) -> Self {
        CliError::Coded {
            code: code.to_owned(),
            message: message.into(),
        }
    }

    /// Any other failure (exit 1).
    pub fn failed(message: impl Into<String>) -> Self {
        CliError::Failed(message.into())
    }

    /// The code, when the failure has one.
    pub fn code(&self) -> Option<&str> {
        match self {
            CliError::Coded { code, .. } => Some(code),
            _ => None,
        }
    }
}

/// Prints the failure (if any) on stderr as `error: CODE: message` and returns the exit code:
/// 0 success, 1 failure, 2 usage error.
pub fn exit(outcome: Result<(), CliError>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            super::output::stderr(format_args!("error: {err}\n"));
            match err {
                CliError::Usage(_) => ExitCode::from(2),
                CliError::Coded { .. } | CliError::Failed(_) => ExitCode::from(1),
            }
        }
    }
}
