//! `sluice ca`: the interception CA (create, export, the environment a
//! sandbox trusts it with).

use std::path::PathBuf;

use clap::Subcommand;

#[derive(Subcommand)]
pub(crate) enum CaCommand {
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

pub(super) fn ca(command: CaCommand, dir: &std::path::Path) -> anyhow::Result<()> {
    use sluice::tls::ca::Ca;
    match command {
        CaCommand::Init => {
            Ca::init(dir)?;
            println!(
                "created {} (and its key, mode 0600)",
                Ca::cert_path(dir).display()
            );
        }
        // The certificate alone: the key may be sealed under the daemon's
        // state key, and exporting needs none of it.
        CaCommand::Export => print!("{}", Ca::cert_pem_in(dir)?),
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
