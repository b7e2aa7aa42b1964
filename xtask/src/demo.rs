//! `cargo xtask demo`: the main job, end to end on this machine.
//!
//! Makes a sandbox cgroup, starts the daemon on a demo config, starts an
//! upstream on loopback, then runs curl inside the sandbox: one request to an
//! allowed destination (steered and relayed) and one to a destination the
//! policy does not allow (refused), and shows the audit log and metrics.
//! Everything it creates is removed at the end, also on failure.

use std::{
    io::{Read as _, Write as _},
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};

pub fn run(sluice: &Path) -> anyhow::Result<()> {
    let mut demo = Demo::start(sluice)?;
    let result = demo.wait_ready().and_then(|()| demo.show());
    demo.stop();
    result
}

struct Demo {
    dir: PathBuf,
    root: PathBuf,
    bpffs: PathBuf,
    sandbox: PathBuf,
    daemon: Child,
    sluice: PathBuf,
    allowed: u16,
    refused: u16,
}

impl Demo {
    fn start(sluice: &Path) -> anyhow::Result<Demo> {
        let mount = cgroup2_mount()?;
        let dir = std::env::temp_dir().join(format!("sluice-demo-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let root = mount.join(format!("sluice-demo-{}", std::process::id()));
        let sandbox = root.join("demo");
        std::fs::create_dir_all(&sandbox).context("creating the sandbox cgroup (are you root?)")?;
        let bpffs = PathBuf::from(format!("/sys/fs/bpf/sluice-demo-{}", std::process::id()));
        let allowed = serve_upstream("hello from the allowed upstream\n")?;
        let refused = serve_upstream("you should never see this\n")?;
        let policies = dir.join("policies");
        std::fs::create_dir_all(&policies)?;
        std::fs::write(
            policies.join("demo.yaml"),
            format!(
                "# Only the allowed upstream. It is on loopback, which the SSRF guard
# refuses unless an address rule names it explicitly.
network:
  allow_out: [\"127.0.0.1:{allowed}\"]
  deny_out: [ALL_TRAFFIC]
"
            ),
        )?;
        let config = dir.join("sluice.yaml");
        std::fs::write(
            &config,
            format!(
                "listen: {{tcp_port: 0}}
cgroup_root: {root}
bpffs: {bpffs}
admin_socket: {dir}/admin.sock
state_dir: {dir}/state
metrics: 127.0.0.1:0
audit: {dir}/audit.jsonl
resolver: {{system: false}}
policy_dir: {dir}/policies
sandboxes:
  - {{id: demo, cgroup: demo, policy: demo}}
",
                root = root.display(),
                bpffs = bpffs.display(),
                dir = dir.display(),
            ),
        )?;
        for file in [config.clone(), policies.join("demo.yaml")] {
            println!("== {}\n{}", file.display(), std::fs::read_to_string(&file)?);
        }
        let daemon = Command::new(sluice)
            .args(["run", "--config"])
            .arg(&config)
            .stdout(Stdio::null())
            .spawn()
            .context("starting sluice")?;
        Ok(Demo {
            dir,
            root,
            bpffs,
            sandbox,
            daemon,
            sluice: sluice.to_owned(),
            allowed,
            refused,
        })
    }

    fn wait_ready(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(exit) = self.daemon.try_wait()? {
                bail!("sluice exited before it was ready ({exit}); its error is above");
            }
            let status = Command::new(&self.sluice)
                .args(["status", "--admin-socket"])
                .arg(self.dir.join("admin.sock"))
                .stderr(Stdio::null())
                .output()?;
            if status.status.success() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        bail!("the daemon did not become ready in 30 s")
    }

    fn show(&mut self) -> anyhow::Result<()> {
        println!(
            "== inside the sandbox: curl http://127.0.0.1:{}/ (allowed)",
            self.allowed
        );
        let ok = self.in_sandbox(&format!(
            "curl -sS --max-time 10 http://127.0.0.1:{}/",
            self.allowed
        ))?;
        print!("{}", String::from_utf8_lossy(&ok.stdout));
        if !ok.status.success() || !String::from_utf8_lossy(&ok.stdout).contains("allowed upstream")
        {
            bail!(
                "the allowed request failed: {}",
                String::from_utf8_lossy(&ok.stderr)
            );
        }
        println!(
            "== inside the sandbox: curl http://127.0.0.1:{}/ (not in the policy)",
            self.refused
        );
        let refused = self.in_sandbox(&format!(
            "curl -sS --max-time 10 http://127.0.0.1:{}/",
            self.refused
        ))?;
        let answer = String::from_utf8_lossy(&refused.stdout);
        println!("{answer}");
        if !answer.contains("\"reason\":\"denied_by_rule\"") {
            bail!("the refused request was not refused by the policy");
        }
        println!("== audit log");
        print!(
            "{}",
            std::fs::read_to_string(self.dir.join("audit.jsonl")).unwrap_or_default()
        );
        println!("== sandboxes");
        let ls = Command::new(&self.sluice)
            .args(["sandbox", "ls", "--admin-socket"])
            .arg(self.dir.join("admin.sock"))
            .output()?;
        print!("{}", String::from_utf8_lossy(&ls.stdout));
        println!("== demo passed: steered, allowed, refused");
        Ok(())
    }

    fn in_sandbox(&self, script: &str) -> anyhow::Result<std::process::Output> {
        let procs = self.sandbox.join("cgroup.procs");
        Ok(Command::new("sh")
            .arg("-c")
            .arg(format!("echo $$ > {} && exec {script}", procs.display()))
            .output()?)
    }

    fn stop(&mut self) {
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
        // Removing the pins detaches the programs.
        let _ = std::fs::remove_dir_all(&self.bpffs);
        let _ = std::fs::remove_dir(&self.sandbox);
        let _ = std::fs::remove_dir(&self.root);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A one-line HTTP server on 127.0.0.1:0, answering every request with `body`.
fn serve_upstream(body: &'static str) -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    Ok(port)
}

fn cgroup2_mount() -> anyhow::Result<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo")?;
    text.lines()
        .find_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mountpoint = left.split_whitespace().nth(4)?;
            (right.split_whitespace().next()? == "cgroup2").then(|| PathBuf::from(mountpoint))
        })
        .context("no cgroup2 mount in /proc/self/mountinfo")
}
