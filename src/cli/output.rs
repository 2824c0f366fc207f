//! Writing to standard output and standard error, never with a panic.
//!
//! Standard output carries what a command produces (a document, a plan), so losing it is an
//! error (`> /dev/full`, a full disk), except a closed pipe (`| head`): its reader wanted no
//! more, and the exit code still tells how the command ended. Standard error carries messages
//! about the run; when it cannot be written there is nowhere left to say so, and the exit code
//! alone tells.

use super::error::CliError;
use std::fmt;
use std::io::{ErrorKind, Write};

/// Writes `args` to standard output and flushes it; a closed pipe is ignored, any other
/// failure is an error naming standard output.
pub fn stdout(args: fmt::Arguments<'_>) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    ignore_broken_pipe(out.write_fmt(args).and_then(|()| out.flush()))
}

/// Writes `bytes` to standard output, as [`stdout`] does.
pub fn stdout_bytes(bytes: &[u8]) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    ignore_broken_pipe(out.write_all(bytes).and_then(|()| out.flush()))
}

/// Writes `args` to standard error, ignoring any failure.
pub fn stderr(args: fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

fn ignore_broken_pipe(outcome: std::io::Result<()>) -> Result<(), CliError> {
    match outcome {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == ErrorKind::BrokenPipe => Ok(()),
        Err(err) => Err(CliError::failed(format!(
            "cannot write to standard output: {err}"
        ))),
    }
}
