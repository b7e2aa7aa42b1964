//! The `sluice` command: the daemon and the tools that talk to it.

#![forbid(unsafe_code)]

use std::{path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};
use sluice::{
    admin::{Client, SandboxSpec, SessionSpec},
    config::Config,
    policy::load::{Against, load_paths},
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
    /// List and decide requests parked for an approval.
    Approvals {
        #[command(subcommand)]
        command: ApprovalsCommand,
        #[arg(long, global = true, default_value = DEFAULT_ADMIN_SOCKET)]
        admin_socket: PathBuf,
    },
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Write a new Ed25519 key pair: token.key (private, 0600) and
    /// token.pub (the daemon's `explicit_proxy.public_key_file`).
    Keygen {
        #[arg(long)]
        dir: PathBuf,
    },
    /// Print a capability token for a sandbox off this node.
    Mint {
        /// The private key (PEM, PKCS#8).
        #[arg(long)]
        key: PathBuf,
        #[arg(long)]
        sandbox: String,
        #[arg(long)]
        session: Option<String>,
        /// `host:port` it may reach (`*.example.com:443`, `api.example.com:*`); repeatable.
        #[arg(long = "connection", value_name = "HOST:PORT", required = true)]
        connections: Vec<String>,
        /// Writes are answered 202 with a preview.
        #[arg(long)]
        dry_run: bool,
        /// Lifetime in seconds (0: already expired, for tests).
        #[arg(long, default_value_t = 300)]
        ttl: u64,
    },
}

#[derive(Subcommand)]
enum ApprovalsCommand {
    /// The parked requests, oldest first.
    Ls {
        #[arg(long)]
        json: bool,
    },
    /// Forward a parked request (with its credentials).
    Approve {
        id: String,
        /// Also let matching requests of the same session through from now on.
        #[arg(long)]
        session: bool,
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
enum CaCommand {
    /// Create a new CA (ECDSA P-256); refuses to overwrite an existing one.
    Init,
    /// Print the CA certificate (PEM), to install in sandboxes.
    Export,
    /// Print `export NAME=VALUE` lines that make common clients trust the CA,
    /// for a sandbox where the certificate is at --path.
    Env {
        /// Where the certificate is inside the sandbox (default: its host path).
        #[arg(long)]
        path: Option<PathBuf>,
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
        /// Write the CA bundle the sandbox should trust to this host path
        /// (inside the sandbox's filesystem).
        #[arg(long)]
        ca_bundle: Option<PathBuf>,
    },
    /// Remove a sandbox: its sockets are refused from now on.
    Rm { id: String },
    /// Print the placeholder environment to give the sandbox (`export` lines).
    Env { id: String },
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
        Command::Check { config, paths } => check(config, paths),
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
            explain(&config, &policy, &method, &url, address).await
        }
        Command::Ca { command, dir } => ca(command, &dir),
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
        } => sandbox(Client::new(admin_socket), command).await,
        Command::Session {
            command,
            admin_socket,
        } => session(Client::new(admin_socket), command).await,
        Command::Approvals {
            command,
            admin_socket,
        } => approvals(Client::new(admin_socket), command).await,
        Command::Token { command } => token(command),
    }
}

/// Every diagnostic of every file, then a one-line summary.
fn check(config: Option<PathBuf>, mut paths: Vec<PathBuf>) -> anyhow::Result<()> {
    let mut problems = Vec::new();
    let mut sandboxes = Vec::new();
    let mut catalogue = None;
    let mut credentials = None;
    if let Some(config) = &config {
        match Config::load(config) {
            Ok(loaded) => {
                paths.push(loaded.policy_dir.clone());
                sandboxes = loaded.sandboxes;
                credentials = Some(loaded.credentials);
                // Valid: `Config::load` compiled it already. The policies'
                // apps and actions are checked against it.
                catalogue = sluice::apps::Catalogue::compile(&loaded.apps).ok();
            }
            Err(err) => problems.push(err.to_string()),
        }
    }
    if paths.is_empty() && config.is_none() {
        anyhow::bail!("nothing to check: give policy files or directories, or --config FILE");
    }
    let mut count = 0;
    if !paths.is_empty() {
        // Bindings the daemon could not compile would leave every
        // placeholder of their policy refused: located like any error.
        let against = Against {
            apps: catalogue.as_ref(),
            credentials: credentials.as_deref(),
        };
        match load_paths(&paths, against) {
            Ok(set) => {
                count = set.len();
                // Valid, but likely not what was meant: said, not refused.
                for name in set.names() {
                    let stages = set.get(name).map(|p| p.stages_on_plain_http_only());
                    if let Some(stages) = stages.filter(|s| !s.is_empty()) {
                        let act = if stages.len() == 1 { "acts" } else { "act" };
                        eprintln!(
                            "warning: policy `{name}`: {} {act} on plain HTTP only: under \
                             network.decide_without_decryption: true HTTPS is relayed \
                             unread (set it to false, with the sandbox trusting Sluice's \
                             CA, for them to see HTTPS too)",
                            stages.join(", ")
                        );
                    }
                }
                for sandbox in &sandboxes {
                    if set.get(&sandbox.policy).is_none() {
                        problems.push(format!(
                            "sandbox `{}` names policy `{}`, which is not among the policies checked",
                            sandbox.id, sandbox.policy
                        ));
                    }
                }
            }
            Err(diagnostics) => problems.extend(diagnostics.iter().map(ToString::to_string)),
        }
    }
    if problems.is_empty() {
        println!("ok: {count} policies");
        Ok(())
    } else {
        for problem in &problems {
            eprintln!("{problem}");
        }
        anyhow::bail!("{} problem(s) found", problems.len())
    }
}

async fn explain(
    config: &std::path::Path,
    policy: &str,
    method: &str,
    url: &str,
    address: Option<std::net::IpAddr>,
) -> anyhow::Result<()> {
    use sluice::explain::{Target, explain};
    let config = Config::load(config)?;
    let catalogue = sluice::apps::Catalogue::compile(&config.apps).ok();
    // On paper: the credential stage is not run, so bindings are not
    // compiled against the daemon's credentials.
    let against = Against {
        apps: catalogue.as_ref(),
        credentials: None,
    };
    let set = load_paths(std::slice::from_ref(&config.policy_dir), against).map_err(|d| {
        let all: Vec<String> = d.iter().map(ToString::to_string).collect();
        anyhow::anyhow!("{}", all.join("\n"))
    })?;
    let compiled = set.get(policy).ok_or_else(|| {
        anyhow::anyhow!("no policy `{policy}` in {}", config.policy_dir.display())
    })?;
    let target = Target::parse(method, url)?;
    let resolver = sluice::resolve::Resolver::new(&config.resolver)?;
    let name_addrs = match target.address() {
        Some(ip) => vec![ip],
        None => resolver.lookup_ip(&target.host).await.unwrap_or_default(),
    };
    let Some(ip) = address.or_else(|| name_addrs.first().copied()) else {
        anyhow::bail!(
            "{} does not resolve; give --address to evaluate a connection anyway",
            target.host
        );
    };
    println!("policy {policy}: {} {url}", target.method);
    if target.address().is_none() {
        let shown: Vec<String> = name_addrs.iter().map(ToString::to_string).collect();
        println!(
            "{:<16} {:<8} {} -> [{}]",
            "resolve",
            "info",
            target.host,
            shown.join(", ")
        );
    }
    for line in explain(
        compiled,
        &target,
        std::net::SocketAddr::new(ip, target.port),
        &name_addrs,
    ) {
        println!("{line}");
    }
    Ok(())
}

fn ca(command: CaCommand, dir: &std::path::Path) -> anyhow::Result<()> {
    use sluice::tls::ca::Ca;
    match command {
        CaCommand::Init => {
            Ca::init(dir)?;
            println!(
                "created {} (and its key, mode 0600)",
                Ca::cert_path(dir).display()
            );
        }
        CaCommand::Export => print!("{}", Ca::load(dir)?.cert_pem()),
        CaCommand::Env { path } => {
            let path = path.unwrap_or_else(|| Ca::cert_path(dir));
            for (name, value) in Ca::env(&path) {
                // Single-quoted for the shell, whatever the path holds.
                println!("export {name}='{}'", value.replace('\'', r"'\''"));
            }
        }
    }
    Ok(())
}

async fn sandbox(client: Client, command: SandboxCommand) -> anyhow::Result<()> {
    match command {
        SandboxCommand::Add {
            id,
            cgroup,
            netns,
            policy,
            ca_bundle,
        } => {
            let spec = SandboxSpec {
                id,
                cgroup,
                netns,
                policy,
                ca_bundle,
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

async fn session(client: Client, command: SessionCommand) -> anyhow::Result<()> {
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

async fn approvals(client: Client, command: ApprovalsCommand) -> anyhow::Result<()> {
    use sluice::approvals::{DecisionSpec, Verdict};
    let by = |by: Option<String>| {
        by.or_else(|| {
            std::env::var("SUDO_USER")
                .or_else(|_| std::env::var("USER"))
                .ok()
                .map(|user| format!("cli:{user}"))
        })
    };
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
            by: who,
        } => {
            let verdict = if session {
                Verdict::ApproveSession
            } else {
                Verdict::ApproveOnce
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

fn token(command: TokenCommand) -> anyhow::Result<()> {
    use sluice::explicit::token::{Claims, Connection, Signer, generate};
    use std::os::unix::fs::OpenOptionsExt as _;
    match command {
        TokenCommand::Keygen { dir } => {
            let (private, public) = generate().map_err(|e| anyhow::anyhow!(e))?;
            std::fs::create_dir_all(&dir)?;
            let key = dir.join("token.key");
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&key)
                .and_then(|mut f| std::io::Write::write_all(&mut f, private.as_bytes()))
                .map_err(|e| anyhow::anyhow!("{}: {e}", key.display()))?;
            std::fs::write(dir.join("token.pub"), public)?;
            println!("wrote {} and token.pub", key.display());
        }
        TokenCommand::Mint {
            key,
            sandbox,
            session,
            connections,
            dry_run,
            ttl,
        } => {
            for c in &connections {
                Connection::parse(c).map_err(|e| anyhow::anyhow!("--connection {e}"))?;
            }
            let pem = std::fs::read(&key).map_err(|e| anyhow::anyhow!("{}: {e}", key.display()))?;
            let signer =
                Signer::from_pem(&pem).map_err(|e| anyhow::anyhow!("{}: {e}", key.display()))?;
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)?
                .as_secs();
            println!(
                "{}",
                signer.mint(&Claims {
                    sub: sandbox,
                    session,
                    connections,
                    dry_run,
                    exp: now + ttl,
                    iat: Some(now),
                })
            );
        }
    }
    Ok(())
}
