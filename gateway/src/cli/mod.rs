//! The `sluice` command line: its commands (clap) and where each goes.
//! A file per family: [`policy`] (`check`, `explain`), [`ca`], [`admin`]
//! (`sandbox`, `session`, `approvals`: the admin API), [`token`]; `run`
//! is the daemon, `scan` the scanners' command.

mod admin;
mod app;
mod ca;
mod policy;
mod token;

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use sluice::admin::Client;

use admin::{ApprovalsCommand, SandboxCommand, SessionCommand};
use ca::CaCommand;
use token::TokenCommand;

pub(super) const DEFAULT_ADMIN_SOCKET: &str = "/run/sluice/admin.sock";

#[derive(Parser)]
#[command(
    name = "sluice",
    version,
    about = "Egress gateway for sandboxes, steered by eBPF"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Run the daemon: attach the programs, steer, decide, relay.
    Run {
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Validate policy files or directories, and/or a daemon config with its
    /// policy directory; prints every error with file:line:column.
    Check {
        /// A daemon config: its policy directory and sandboxes are checked too.
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// Policy files or directories.
        paths: Vec<PathBuf>,
    },
    /// Show what each stage would decide for one request, and which rule.
    Explain {
        /// The URL the sandbox asks for.
        url: String,
        #[arg(long, short = 'X', default_value = "GET")]
        method: String,
        /// Evaluate the policy of this registered sandbox (asks the daemon).
        #[arg(long, conflicts_with = "policy", required_unless_present = "policy")]
        sandbox: Option<String>,
        /// Evaluate this policy by name.
        #[arg(long)]
        policy: Option<String>,
        /// Daemon config: where the policies live and how names resolve.
        #[arg(long, short, default_value = "/etc/sluice/sluice.yaml")]
        config: PathBuf,
        /// The address the sandbox connected to (default: what the name resolves to).
        #[arg(long)]
        address: Option<std::net::IpAddr>,
        #[arg(long, default_value = DEFAULT_ADMIN_SOCKET)]
        admin_socket: PathBuf,
    },
    /// Policies written from traffic.
    Policy {
        #[command(subcommand)]
        command: policy::PolicyCommand,
    },
    /// Run a policy's PII and secret detectors over a file or stdin and
    /// print the findings as JSON (`--jsonl` for corpus records).
    Scan(sluice::scan::cli::ScanArgs),
    /// Print the running daemon's status (JSON): version, readiness,
    /// programs and maps, sandboxes, policy sync, recent refusals.
    Status {
        /// A summary for people instead of JSON.
        #[arg(long)]
        text: bool,
        #[arg(long, default_value = DEFAULT_ADMIN_SOCKET)]
        admin_socket: PathBuf,
    },
    /// The interception CA: create it, print it, or print the environment
    /// that makes a sandbox's clients trust it.
    Ca {
        #[command(subcommand)]
        command: CaCommand,
        /// Directory of ca.pem and ca.key (the daemon's `tls.ca_dir`).
        #[arg(long, global = true, default_value = "/var/lib/sluice/ca")]
        dir: PathBuf,
    },
    /// Register, remove and list sandboxes.
    Sandbox {
        #[command(subcommand)]
        command: SandboxCommand,
        #[arg(long, global = true, default_value = DEFAULT_ADMIN_SOCKET)]
        admin_socket: PathBuf,
    },
    /// Register and remove sessions (child cgroups of a sandbox).
    Session {
        #[command(subcommand)]
        command: SessionCommand,
        #[arg(long, global = true, default_value = DEFAULT_ADMIN_SOCKET)]
        admin_socket: PathBuf,
    },
    /// Capability tokens for sandboxes off this node (the explicit proxy).
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Publish what a sandbox serves through the web-app ingress.
    App {
        #[command(subcommand)]
        command: app::AppCommand,
        #[arg(long, global = true, default_value = DEFAULT_ADMIN_SOCKET)]
        admin_socket: PathBuf,
    },
    /// List and decide requests parked for an approval.
    Approvals {
        #[command(subcommand)]
        command: ApprovalsCommand,
        #[arg(long, global = true, default_value = DEFAULT_ADMIN_SOCKET)]
        admin_socket: PathBuf,
    },
}

/// Runs `command` on an async runtime: the daemon's with as many workers as
/// its config asks, any other command's with the default.
pub(crate) fn dispatch(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Run { config: path } => {
            let config = sluice::config::Config::load(&path)?;
            runtime(config.worker_threads)?.block_on(sluice::daemon::run(&path, config))
        }
        command => runtime(None)?.block_on(dispatch_tool(command)),
    }
}

/// A multi-threaded runtime; `workers` unset: one per CPU.
fn runtime(workers: Option<std::num::NonZeroUsize>) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = workers {
        builder.worker_threads(workers.get());
    }
    builder
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

async fn dispatch_tool(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Run { .. } => unreachable!("the daemon is started by dispatch"),
        Command::Check { config, paths } => policy::check(config, paths),
        Command::Explain {
            url,
            method,
            sandbox,
            policy,
            config,
            address,
            admin_socket,
        } => {
            let policy = match (sandbox, policy) {
                (_, Some(policy)) => policy,
                (Some(id), None) => Client::new(admin_socket)
                    .list()
                    .await?
                    .into_iter()
                    .find(|s| s.id == id)
                    .map(|s| s.policy)
                    .ok_or_else(|| anyhow::anyhow!("no sandbox `{id}` is registered"))?,
                (None, None) => anyhow::bail!("give --sandbox ID or --policy NAME"),
            };
            policy::explain(&config, &policy, &method, &url, address).await
        }
        Command::Ca { command, dir } => ca::ca(command, &dir),
        Command::Policy { command } => policy::policy(command).await,
        Command::Scan(args) => Ok(sluice::scan::cli::run(&args)?),
        Command::Status { text, admin_socket } => {
            let status = Client::new(admin_socket).status().await?;
            if text {
                let now_ms = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64);
                print!("{}", sluice::admin::status_text::render(&status, now_ms));
            } else {
                println!("{}", serde_json::to_string_pretty(&status)?);
            }
            Ok(())
        }
        Command::Sandbox {
            command,
            admin_socket,
        } => admin::sandbox(Client::new(admin_socket), command).await,
        Command::Session {
            command,
            admin_socket,
        } => admin::session(Client::new(admin_socket), command).await,
        Command::Approvals {
            command,
            admin_socket,
        } => admin::approvals(Client::new(admin_socket), command).await,
        Command::Token { command } => token::token(command),
        Command::App {
            command,
            admin_socket,
        } => app::app(Client::new(admin_socket), command).await,
    }
}
