//! The `sluice` command: the daemon and the tools that talk to it. The
//! commands live in [`cli`], a file per family.

#![forbid(unsafe_code)]

mod cli;

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    match cli::dispatch(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("sluice: {err:#}");
            ExitCode::FAILURE
        }
    }
}
