//! `sluice app`: publish a sandbox's port through the web-app ingress,
//! list, remove and re-scope publications (the admin API's `/v1/apps`).

use clap::Subcommand;
use sluice::{
    admin::Client,
    ingress::{publish::PublishRequest, scope::Scope},
};

#[derive(Subcommand)]
pub(crate) enum AppCommand {
    /// Publish port N of a sandbox at `https://NAME.<apps domain>/`.
    Publish {
        sandbox: String,
        #[arg(long)]
        port: u16,
        /// The app's name (a DNS label; default `SANDBOX-PORT`).
        #[arg(long)]
        name: Option<String>,
        /// Who may open it: private (the owner), org, users:SUB[,SUB...], public.
        #[arg(long, default_value = "private")]
        scope: Scope,
        /// How long it stays published: 90s, 30m, 12h, 7d (default: until removed).
        #[arg(long, value_parser = parse_duration)]
        ttl: Option<u64>,
    },
    /// List published apps.
    Ls {
        #[arg(long)]
        json: bool,
    },
    /// Unpublish an app: its URL answers 404 and its viewers' sessions end.
    Rm { name: String },
    /// Change who may open an app; open sessions are decided again.
    Scope { name: String, scope: Scope },
}

/// `90`, `90s`, `30m`, `12h`, `7d` in seconds.
fn parse_duration(s: &str) -> Result<u64, String> {
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, "s"),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (90s, 30m, 12h, 7d)"))?;
    let unit = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("`{s}`: use s, m, h or d")),
    };
    n.checked_mul(unit)
        .ok_or_else(|| format!("`{s}` is too long"))
}

pub(crate) async fn app(client: Client, command: AppCommand) -> anyhow::Result<()> {
    match command {
        AppCommand::Publish {
            sandbox,
            port,
            name,
            scope,
            ttl,
        } => {
            let app = client
                .publish(&PublishRequest {
                    sandbox,
                    port,
                    name,
                    scope: Some(scope),
                    ttl_secs: ttl,
                })
                .await?;
            println!(
                "published {} ({}:{}, {}) at {}",
                app.name, app.sandbox, app.port, app.scope, app.url
            );
        }
        AppCommand::Ls { json } => {
            let apps = client.apps().await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&apps)?);
            } else if apps.is_empty() {
                println!("no published apps");
            } else {
                for app in apps {
                    println!(
                        "{:<24} {}:{:<6} {:<16} {}",
                        app.name, app.sandbox, app.port, app.scope, app.url
                    );
                }
            }
        }
        AppCommand::Rm { name } => {
            client.unpublish(&name).await?;
            println!("unpublished {name}");
        }
        AppCommand::Scope { name, scope } => {
            let app = client.set_scope(&name, scope).await?;
            println!("{} is now {}", app.name, app.scope);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations_parse() {
        for (s, want) in [
            ("90", Ok(90)),
            ("90s", Ok(90)),
            ("30m", Ok(1800)),
            ("12h", Ok(43_200)),
            ("7d", Ok(604_800)),
        ] {
            assert_eq!(super::parse_duration(s), want, "{s}");
        }
        for bad in ["", "m", "5w", "1.5h", "99999999999999999999d"] {
            assert!(super::parse_duration(bad).is_err(), "{bad}");
        }
    }
}
