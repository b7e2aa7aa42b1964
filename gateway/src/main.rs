//! The `sluice` command: the daemon and the tools that talk to it.

use std::{path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};
use sluice::{
    admin::{Client, SandboxSpec, SessionSpec},
    config::Config,
};

const DEFAULT_ADMIN_SOCKET: &str = "/run/sluice/admin.sock";

#[derive(Parser)]
#[command(
    name = "sluice",
    version,
    about = "Egress gateway for sandboxes, steered by eBPF"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the daemon: attach the programs, steer, decide, relay.
    Run {
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Validate a config file; prints every error with file:line:column.
    Check {
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Print the running daemon's status as JSON.
    Status {
        #[arg(long, default_value = DEFAULT_ADMIN_SOCKET)]
        admin_socket: PathBuf,
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
}

#[derive(Subcommand)]
enum SandboxCommand {
    /// Register a sandbox cgroup (absolute, or relative to the sandbox root).
    Add {
        id: String,
        #[arg(long)]
        cgroup: PathBuf,
        /// Network namespace to open Sluice's listeners in (/run/netns/NAME).
        #[arg(long)]
        netns: Option<PathBuf>,
        /// Policy name from the config (default: `default`).
        #[arg(long)]
        policy: Option<String>,
    },
    /// Remove a sandbox: its sockets are refused from now on.
    Rm { id: String },
    /// List sandboxes and their sessions.
    Ls {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum SessionCommand {
    /// Register a session cgroup below its sandbox's cgroup.
    Add {
        sandbox: String,
        id: String,
        #[arg(long)]
        cgroup: PathBuf,
    },
    /// Remove a session.
    Rm { sandbox: String, id: String },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("sluice: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(dispatch(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("sluice: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn dispatch(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Run { config } => sluice::daemon::run(&config).await,
        Command::Check { config } => {
            Config::load(&config)?;
            println!("ok");
            Ok(())
        }
        Command::Status { admin_socket } => {
            let status = Client::new(admin_socket).status().await?;
            println!("{}", serde_json::to_string_pretty(&status)?);
            Ok(())
        }
        Command::Sandbox {
            command,
            admin_socket,
        } => sandbox(Client::new(admin_socket), command).await,
        Command::Session {
            command,
            admin_socket,
        } => session(Client::new(admin_socket), command).await,
    }
}

async fn sandbox(client: Client, command: SandboxCommand) -> anyhow::Result<()> {
    match command {
        SandboxCommand::Add {
            id,
            cgroup,
            netns,
            policy,
        } => {
            let spec = SandboxSpec {
                id,
                cgroup,
                netns,
                policy,
            };
            let info = client.add_sandbox(&spec).await?;
            println!(
                "added {} ({}, cgroup id {})",
                info.id,
                info.cgroup.display(),
                info.cgroup_id
            );
        }
        SandboxCommand::Rm { id } => {
            client.remove_sandbox(&id).await?;
            println!("removed {id}");
        }
        SandboxCommand::Ls { json } => {
            let sandboxes = client.list().await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&sandboxes)?);
            } else {
                println!(
                    "{:<20} {:<10} {:<8} {:<10} CGROUP",
                    "ID", "POLICY", "SOURCE", "SESSIONS"
                );
                for s in sandboxes {
                    println!(
                        "{:<20} {:<10} {:<8} {:<10} {}",
                        s.id,
                        s.policy,
                        s.source,
                        s.sessions.len(),
                        s.cgroup.display()
                    );
                }
            }
        }
    }
    Ok(())
}

async fn session(client: Client, command: SessionCommand) -> anyhow::Result<()> {
    match command {
        SessionCommand::Add {
            sandbox,
            id,
            cgroup,
        } => {
            let info = client
                .add_session(&sandbox, &SessionSpec { id, cgroup })
                .await?;
            println!(
                "added session {} of {sandbox} ({})",
                info.id,
                info.cgroup.display()
            );
        }
        SessionCommand::Rm { sandbox, id } => {
            client.remove_session(&sandbox, &id).await?;
            println!("removed session {id} of {sandbox}");
        }
    }
    Ok(())
}
