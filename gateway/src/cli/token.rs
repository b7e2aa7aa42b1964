//! `sluice token`: capability tokens for sandboxes off this node (the key
//! pair, and tokens minted with it).

use std::path::PathBuf;

use clap::Subcommand;

#[derive(Subcommand)]
pub(crate) enum TokenCommand {
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
        /// Lifetime in seconds (0: already expired, past the clocks'
        /// leeway too, for tests).
        #[arg(long, default_value_t = 300)]
        ttl: u64,
        /// The node it is for (the daemon's `explicit_proxy.audience`).
        #[arg(long)]
        audience: Option<String>,
        /// A catalogued app (`tracker`) or action (`tracker.repo.read`) its
        /// requests may use; repeatable. None: what the policy allows.
        #[arg(long = "tool", value_name = "APP[.ACTION]")]
        tools: Vec<String>,
    },
}

pub(super) fn token(command: TokenCommand) -> anyhow::Result<()> {
    use sluice::explicit::token::{Claims, Connection, LEEWAY_SECS, Signer, generate};
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
            audience,
            tools,
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
                    exp: match ttl {
                        0 => now.saturating_sub(LEEWAY_SECS + 1),
                        ttl => now + ttl,
                    },
                    iat: Some(now),
                    nbf: None,
                    aud: audience,
                    tools: (!tools.is_empty()).then_some(tools),
                })
            );
        }
    }
    Ok(())
}
