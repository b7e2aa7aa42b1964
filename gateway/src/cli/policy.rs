//! `sluice check` (every error of a config and its policies, with
//! file:line:column), `sluice explain` (a request through a policy's
//! stages, on paper) and `sluice policy suggest` (a policy from an audit
//! log).

use std::path::PathBuf;

use sluice::{
    config::Config,
    policy::{
        load::{Against, load_paths},
        suggest,
    },
};

#[derive(clap::Subcommand)]
pub(crate) enum PolicyCommand {
    /// Propose a policy from an audit log: allow rules for every
    /// destination its connections reached (run the sandbox under
    /// `mode: learn` first), commented with counts and programs. Review
    /// it, then `sluice check` it.
    Suggest {
        /// The audit log (JSON lines) to read.
        #[arg(long)]
        audit: PathBuf,
        /// Only this sandbox's connections.
        #[arg(long)]
        sandbox: Option<String>,
        /// Only events since then: milliseconds since the epoch, or an age
        /// (`30m`, `2h`, `1d`).
        #[arg(long)]
        since: Option<String>,
    },
    /// The allow rules added to sandboxes at run time (a network approval's
    /// "always", `sluice sandbox policy --add-allow`), kept across restarts.
    Overlay {
        #[command(subcommand)]
        command: OverlayCommand,
        #[arg(long, global = true, default_value = super::DEFAULT_ADMIN_SOCKET)]
        admin_socket: PathBuf,
    },
}

#[derive(clap::Subcommand)]
pub(crate) enum OverlayCommand {
    /// Every sandbox's entries (or one sandbox's).
    Ls { sandbox: Option<String> },
    /// Remove an entry: the sandbox's connections admitted while it was
    /// there close, and later ones are decided without it.
    Rm {
        sandbox: String,
        target: String,
        #[arg(long)]
        by: Option<String>,
    },
}

async fn overlay(client: sluice::admin::Client, command: OverlayCommand) -> anyhow::Result<()> {
    match command {
        OverlayCommand::Ls { sandbox } => {
            for (id, entries) in client.overlays().await? {
                if sandbox.as_ref().is_none_or(|wanted| *wanted == id) {
                    super::admin::print_overlay(&id, &entries);
                }
            }
        }
        OverlayCommand::Rm {
            sandbox,
            target,
            by,
        } => {
            let change = sluice::admin::api::OverlayChange {
                remove: Some(target.clone()),
                by: super::admin::by_default(by),
                ..Default::default()
            };
            client.change_overlay(&sandbox, &change).await?;
            println!("removed {target} from the overlay of {sandbox}");
        }
    }
    Ok(())
}

pub(super) async fn policy(command: PolicyCommand) -> anyhow::Result<()> {
    match command {
        PolicyCommand::Overlay {
            command,
            admin_socket,
        } => overlay(sluice::admin::Client::new(admin_socket), command).await,
        PolicyCommand::Suggest {
            audit,
            sandbox,
            since,
        } => {
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64);
            let since_ms = since
                .map(|text| suggest::since_ms(&text, now_ms))
                .transpose()
                .map_err(anyhow::Error::msg)?;
            let log = std::fs::read_to_string(&audit)
                .map_err(|e| anyhow::anyhow!("reading {}: {e}", audit.display()))?;
            let got = suggest::suggest(&log, &suggest::Filter { sandbox, since_ms });
            print!("{}", got.yaml);
            eprintln!(
                "{} connections read; {} lines skipped (not audit events, or naming nothing usable)",
                got.connections, got.skipped
            );
            Ok(())
        }
    }
}

/// Every diagnostic of every file, then a one-line summary.
pub(super) fn check(config: Option<PathBuf>, mut paths: Vec<PathBuf>) -> anyhow::Result<()> {
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
                    let readings = set.get(name).map(|p| p.network.all_traffic_readings());
                    for label in readings.unwrap_or_default() {
                        eprintln!(
                            "note: policy `{name}`: {label} (a `/0` without ports, listed without \
                             the other family's) is read as all traffic, IPv4 and IPv6; give \
                             it ports, or list `0.0.0.0/0` and `::/0` both, to keep to one \
                             family"
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

pub(super) async fn explain(
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
