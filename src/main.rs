//! The `better-compute` binary: glue between the command line and the library.

use std::process::ExitCode;

fn main() -> ExitCode {
    better_compute::cli::main()
}
