//! The deployment files validate offline with the tools operators' CI
//! would use: `systemd-analyze verify` for the unit, and
//! `kubernetes-validate` (bundled Kubernetes schemas, strict) for the
//! manifests. `cargo xtask setup` installs both; a missing tool fails the
//! test with that hint, never skips it.

use std::{
    os::unix::fs::PermissionsExt as _,
    path::{Path, PathBuf},
    process::Command,
};

/// Where `cargo xtask setup` puts the manifest validator.
const VALIDATOR: &str = "/opt/sluice-dev/venv/bin/kubernetes-validate";

fn deploy(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy")
        .join(path)
}

fn run(cmd: &mut Command) -> (bool, String, String) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?} ({e}); run `cargo xtask setup`"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn systemd_unit_verifies() {
    // verify wants the binaries the unit names to exist: point them at a
    // stub in a private directory, leave everything else as shipped.
    let dir = tempfile::tempdir().expect("tempdir");
    let stub = dir.path().join("sluice");
    std::fs::write(&stub, "#!/bin/sh\n").expect("stub");
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let unit = std::fs::read_to_string(deploy("systemd/sluice.service")).expect("unit");
    assert!(
        unit.contains("/usr/local/bin/sluice run"),
        "the unit runs the daemon"
    );
    let unit_path = dir.path().join("sluice.service");
    std::fs::write(
        &unit_path,
        unit.replace("/usr/local/bin/sluice", &stub.to_string_lossy()),
    )
    .expect("write unit");
    // `--man=no`: the man pages `Documentation=` names are the reader's;
    // a machine without man-db (a fresh one) has none to look up.
    let (ok, stdout, stderr) = run(Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&unit_path));
    assert!(
        ok && stderr.trim().is_empty(),
        "systemd-analyze verify: ok={ok}\n{stdout}\n{stderr}"
    );
    // The hardening leaves what the daemon needs.
    for needed in [
        "CAP_BPF",
        "CAP_NET_ADMIN",
        "CAP_SYS_ADMIN",
        "RestrictNamespaces=net",
        "ReadWritePaths=/sys/fs/cgroup /sys/fs/bpf",
        "StateDirectory=sluice",
        "ConfigurationDirectory=sluice",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "LoadCredential",
    ] {
        assert!(unit.contains(needed), "the unit lacks {needed}");
    }
}

#[test]
fn kubernetes_manifests_validate_against_the_schemas() {
    let dir = deploy("kubernetes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("deploy/kubernetes")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let validator = std::env::var_os("SLUICE_KUBERNETES_VALIDATE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(VALIDATOR));
    let (ok, stdout, stderr) = run(Command::new(&validator)
        .args(["--strict", "--kubernetes-version", "1.30.0"])
        .args(&files));
    assert!(
        ok,
        "{} rejected the manifests:\n{stdout}\n{stderr}",
        validator.display()
    );
    let kinds: Vec<&str> = [
        "DaemonSet",
        "ConfigMap",
        "Secret",
        "ServiceAccount",
        "Service",
        "Namespace",
    ]
    .into_iter()
    .filter(|kind| {
        !stdout
            .to_lowercase()
            .contains(&format!("{}/", kind.to_lowercase()))
    })
    .collect();
    assert!(kinds.is_empty(), "not validated: {kinds:?}\n{stdout}");
}
