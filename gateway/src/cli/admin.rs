//! `sluice sandbox`, `sluice session` and `sluice approvals`: requests to
//! the daemon's admin API.

use std::path::PathBuf;

use clap::Subcommand;
use sluice::admin::{Client, SandboxSpec, SessionSpec};

#[derive(Subcommand)]
pub(crate) enum ApprovalsCommand {
    /// The parked requests, oldest first.
    Ls {
        #[arg(long)]
        json: bool,
    },
    /// Forward a parked request (with its credentials).
    Approve {
        id: String,
        /// Also let matching requests of the same session through from now on.
        #[arg(long, conflicts_with = "always")]
        session: bool,
        /// A connection the network policy asked about: also write its
        /// destination into the sandbox's overlay as an allow rule (kept
        /// across restarts; `sluice policy overlay rm` takes it back).
        #[arg(long)]
        always: bool,
        /// Who decides, for the audit log (default: $SUDO_USER, $USER).
        #[arg(long)]
        by: Option<String>,
    },
    /// Refuse a parked request (the sandbox gets 403 `approval_rejected`).
    Reject {
        id: String,
        #[arg(long)]
        by: Option<String>,
    },
}

#[derive(Subcommand)]
pub(crate) enum SandboxCommand {
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
        /// Write the CA bundle the sandbox should trust to this host path
        /// (inside the sandbox's filesystem).
        #[arg(long)]
        ca_bundle: Option<PathBuf>,
        /// Who owns it, `SUB` or `SUB@ORG` (viewer-token subject and org):
        /// whom its published apps admit under `private` and `org`.
        #[arg(long, value_parser = parse_owner)]
        owner: Option<sluice::ingress::scope::OwnerId>,
    },
    /// Remove a sandbox: its sockets are refused from now on.
    Rm { id: String },
    /// Show or edit the sandbox's overlay: allow rules added at run time
    /// on top of its policy file, without editing it.
    Policy {
        id: String,
        /// Add an `allow_out` target (`api.example.com:443`, `*.example.com`,
        /// `203.0.113.0/24`).
        #[arg(long, conflicts_with = "rm")]
        add_allow: Option<String>,
        /// Remove an entry, by its target as listed.
        #[arg(long)]
        rm: Option<String>,
        /// Who changes it, for the audit log (default: $SUDO_USER, $USER).
        #[arg(long)]
        by: Option<String>,
    },
    /// Print the placeholder environment to give the sandbox (`export` lines).
    Env { id: String },
    /// List sandboxes and their sessions.
    Ls {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
pub(crate) enum SessionCommand {
    /// Register a session cgroup below its sandbox's cgroup.
    Add {
        sandbox: String,
        id: String,
        #[arg(long)]
        cgroup: PathBuf,
        /// A task run: nobody is there to answer approvals.
        #[arg(long)]
        task: bool,
        /// An app whose `ask` actions this task run may use without asking
        /// (repeatable; implies --task; never overrides `deny`).
        #[arg(long = "pre-approve", value_name = "APP")]
        pre_approve: Vec<String>,
    },
    /// Remove a session (of a sandbox the explicit proxy serves: end it,
    /// dropping its grants and PII tokens).
    Rm { sandbox: String, id: String },
}

pub(super) async fn sandbox(client: Client, command: SandboxCommand) -> anyhow::Result<()> {
    match command {
        SandboxCommand::Add {
            id,
            cgroup,
            netns,
            policy,
            ca_bundle,
            owner,
        } => {
            let spec = SandboxSpec {
                id,
                cgroup,
                netns,
                policy,
                ca_bundle,
                owner,
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
        SandboxCommand::Policy {
            id,
            add_allow,
            rm,
            by,
        } => {
            let entries = if add_allow.is_none() && rm.is_none() {
                client.overlays().await?.remove(&id).unwrap_or_default()
            } else {
                let change = sluice::admin::api::OverlayChange {
                    add_allow,
                    remove: rm,
                    by: by_default(by),
                };
                client.change_overlay(&id, &change).await?
            };
            print_overlay(&id, &entries);
        }
        SandboxCommand::Env { id } => {
            for (name, value) in client.env(&id).await? {
                println!("export {name}='{}'", value.replace('\'', r"'\''"));
            }
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

/// Prints one sandbox's overlay entries.
pub(super) fn print_overlay(sandbox: &str, entries: &[sluice::policy::overlay::Entry]) {
    if entries.is_empty() {
        println!("{sandbox}: no overlay entries");
    }
    for entry in entries {
        println!("{sandbox:<16} {:<40} by {}", entry.target, entry.by);
    }
}

/// `$SUDO_USER` or `$USER`, as `cli:NAME`, where `by` is not given.
pub(super) fn by_default(by: Option<String>) -> Option<String> {
    by.or_else(|| {
        std::env::var("SUDO_USER")
            .or_else(|_| std::env::var("USER"))
            .ok()
            .map(|user| format!("cli:{user}"))
    })
}

pub(super) async fn session(client: Client, command: SessionCommand) -> anyhow::Result<()> {
    match command {
        SessionCommand::Add {
            sandbox,
            id,
            cgroup,
            task,
            pre_approve,
        } => {
            let task = (task || !pre_approve.is_empty()).then_some(sluice::admin::TaskSpec {
                pre_approved_apps: pre_approve,
            });
            let info = client
                .add_session(&sandbox, &SessionSpec { id, cgroup, task })
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

pub(super) async fn approvals(client: Client, command: ApprovalsCommand) -> anyhow::Result<()> {
    use sluice::approvals::{DecisionSpec, Verdict};
    let by = by_default;
    let (id, spec) = match command {
        ApprovalsCommand::Ls { json } => {
            let cards = client.approvals().await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&cards)?);
            } else {
                println!(
                    "{:<17} {:<12} {:<10} {:<24} REQUEST",
                    "ID", "SANDBOX", "SESSION", "APP/ACTION"
                );
                for c in cards {
                    if c.kind == sluice::approvals::CardKind::Network {
                        println!(
                            "{:<17} {:<12} {:<10} {:<24} connect {}:{}",
                            c.id,
                            c.sandbox,
                            c.session.as_deref().unwrap_or("-"),
                            "(network)",
                            c.host,
                            c.port.unwrap_or_default()
                        );
                        continue;
                    }
                    let action = c.action.as_deref().unwrap_or("(uncatalogued)");
                    println!(
                        "{:<17} {:<12} {:<10} {:<24} {} {}{}",
                        c.id,
                        c.sandbox,
                        c.session.as_deref().unwrap_or("-"),
                        format!("{}/{action}", c.app),
                        c.method,
                        c.host,
                        c.path
                    );
                }
            }
            return Ok(());
        }
        ApprovalsCommand::Approve {
            id,
            session,
            always,
            by: who,
        } => {
            let verdict = match (session, always) {
                (_, true) => Verdict::ApproveAlways,
                (true, false) => Verdict::ApproveSession,
                (false, false) => Verdict::ApproveOnce,
            };
            (
                id,
                DecisionSpec {
                    verdict,
                    by: by(who),
                },
            )
        }
        ApprovalsCommand::Reject { id, by: who } => (
            id,
            DecisionSpec {
                verdict: Verdict::Reject,
                by: by(who),
            },
        ),
    };
    let card = client.decide(&id, &spec).await?;
    if card.kind == sluice::approvals::CardKind::Network {
        println!(
            "{} {}: {}:{} ({} in {})",
            spec.verdict.as_str(),
            card.id,
            card.host,
            card.port.unwrap_or_default(),
            card.rule.as_deref().unwrap_or("network"),
            card.sandbox
        );
        return Ok(());
    }
    println!(
        "{} {}: {} {}{} ({} in {})",
        spec.verdict.as_str(),
        card.id,
        card.method,
        card.host,
        card.path,
        card.app,
        card.sandbox
    );
    Ok(())
}

fn parse_owner(s: &str) -> Result<sluice::ingress::scope::OwnerId, String> {
    sluice::ingress::scope::OwnerId::parse(s).map_err(|e| e.to_string())
}
