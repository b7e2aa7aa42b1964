//! systemd credentials: the files `LoadCredential=` and
//! `LoadCredentialEncrypted=` put in the directory `$CREDENTIALS_DIRECTORY`
//! names, for the credential sources and the state key alike.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The variable systemd sets to the service's credentials directory.
pub const CREDENTIALS_DIRECTORY: &str = "CREDENTIALS_DIRECTORY";

/// `$CREDENTIALS_DIRECTORY/name`, given the variable's value; the error
/// says what is missing (the variable, or the file) and how to give it.
pub fn credential_path(
    name: &str,
    credentials_directory: Option<OsString>,
) -> Result<PathBuf, String> {
    let Some(dir) = credentials_directory.filter(|d| !d.is_empty()) else {
        return Err(format!(
            "systemd credential {name:?}: ${CREDENTIALS_DIRECTORY} is not set (run under systemd with LoadCredential={name}:PATH or LoadCredentialEncrypted={name}:PATH)"
        ));
    };
    let path = Path::new(&dir).join(name);
    if !path.exists() {
        return Err(format!(
            "systemd credential {name:?}: no {} (is there a LoadCredential={name}:PATH line in the unit?)",
            path.display()
        ));
    }
    Ok(path)
}
