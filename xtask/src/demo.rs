//! `cargo xtask demo`: the main job, end to end on this machine.
//!
//! Makes a sandbox cgroup, starts the daemon on a demo config and policy,
//! starts an upstream on loopback that echoes what it receives, then runs
//! curl inside the sandbox: a request carrying a placeholder credential
//! (Sluice swaps in the real secret and redacts it from the echo), the same
//! placeholder aimed at another host (refused: exfiltration), a request
//! with personal data (the upstream sees tokens, the sandbox gets the values
//! back), and a destination the policy does not allow (refused). Shows the
//! audit log.
//! Everything it creates is removed at the end, also on failure.

use std::{
    io::{Read as _, Write as _},
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};

/// The real secret; the sandbox never sees it.
const SECRET: &str = "sk-demo-REAL-SECRET-4f1c9a7e2b8d";
/// Personal data the sandbox sends; the upstream sees tokens instead.
const EMAIL: &str = "ana.lopez@example.com";
const CARD: &str = "4111 1111 1111 1111";

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
    /// The echo upstream's port, and what it received.
    echo: u16,
    seen: Arc<Mutex<Vec<String>>>,
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
        let seen = Arc::new(Mutex::new(Vec::new()));
        let echo = serve_echo(seen.clone())?;
        let refused = serve_echo(Arc::new(Mutex::new(Vec::new())))?;
        std::fs::write(dir.join("demo-api.secret"), SECRET)?;
        let policies = dir.join("policies");
        std::fs::create_dir_all(&policies)?;
        std::fs::write(
            policies.join("demo.yaml"),
            format!(
                "# Two names on the demo upstream, nothing else. The upstream is on
# loopback, which the SSRF guard refuses unless an address rule names it.
network:
  allow_out: [api.demo.test, other.demo.test, \"127.0.0.1:{echo}\"]
  deny_out: [ALL_TRAFFIC]
  decide_without_decryption: false   # intercept, so credentials can be swapped
credentials:
  # The demo upstream speaks plain HTTP; real bindings keep this false.
  - {{credential: demo-api, allow_plain_http: true}}
# Personal data leaves as per-session tokens and comes back restored.
pii: {{enabled: true}}
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
resolver: {{system: false, hosts: {{api.demo.test: [127.0.0.1], other.demo.test: [127.0.0.1]}}}}
tls: {{ca_dir: {dir}/ca}}
credentials:
  - name: demo-api
    source: {{file: {dir}/demo-api.secret}}
    hosts: [api.demo.test]
    scheme: {{type: bearer}}
    placeholder: {{prefix: sk-demo-}}
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
            echo,
            seen,
            refused,
        })
    }

    fn wait_ready(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(exit) = self.daemon.try_wait()? {
                bail!("sluice exited before it was ready ({exit}); its error is above");
            }
            let status = self.admin(&["status"])?;
            if status.status.success() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        bail!("the daemon did not become ready in 30 s")
    }

    fn show(&mut self) -> anyhow::Result<()> {
        println!("== the sandbox's environment: a placeholder, never the secret");
        let env = self.admin(&["sandbox", "env", "demo"])?;
        let env = String::from_utf8_lossy(&env.stdout).into_owned();
        print!("{env}");
        let placeholder = env
            .lines()
            .find_map(|l| l.strip_prefix("export DEMO_API="))
            .map(|v| v.trim_matches('\'').to_owned())
            .context("no DEMO_API placeholder from `sluice sandbox env`")?;

        let url = format!("http://api.demo.test:{}/v1/models", self.echo);
        println!("== inside the sandbox: curl {url} -H 'Authorization: Bearer $DEMO_API'");
        let out = self.curl(&url, &placeholder)?;
        println!("{out}");
        let upstream = self.seen.lock().expect("echo log").join("\n");
        println!("-- what the upstream received:\n{upstream}");
        if !upstream.contains(&format!("Bearer {SECRET}")) {
            bail!("the upstream did not receive the real credential");
        }
        if out.contains(SECRET) || !out.contains("[redacted:credential]") {
            bail!("the echoed secret was not redacted on its way back");
        }

        let url = format!("http://other.demo.test:{}/collect", self.echo);
        println!("== inside the sandbox: the same placeholder to {url} (exfiltration)");
        let before = self.seen.lock().expect("echo log").len();
        let out = self.curl(&url, &placeholder)?;
        println!("{out}");
        if !out.contains("\"reason\":\"exfiltration\"")
            || self.seen.lock().expect("echo log").len() != before
        {
            bail!("the exfiltration attempt was not refused");
        }

        let url = format!("http://127.0.0.1:{}/", self.refused);
        println!("== inside the sandbox: curl {url} (not in the policy)");
        let out = self.curl(&url, "")?;
        println!("{out}");
        if !out.contains("\"reason\":\"denied_by_rule\"") {
            bail!("the refused request was not refused by the policy");
        }
        let url = format!("http://api.demo.test:{}/v1/chat/completions", self.echo);
        let body = format!(
            r#"{{"messages":[{{"role":"user","content":"Mail {EMAIL} and charge card {CARD}"}}]}}"#
        );
        println!("== inside the sandbox: POST {url} with personal data\n{body}");
        let before = self.seen.lock().expect("echo log").len();
        let out = self.in_sandbox(&format!(
            "curl -sS --max-time 10 -H 'content-type: application/json' --data '{body}' {url}"
        ))?;
        let out = String::from_utf8_lossy(&out.stdout).into_owned();
        let upstream = self.seen.lock().expect("echo log")[before..].join("\n");
        println!("-- what the upstream received:\n{upstream}");
        println!("-- what the sandbox got back (the upstream's echo, tokens restored):\n{out}");
        if upstream.contains(EMAIL) || upstream.contains(CARD) || !upstream.contains("[pii_email_")
        {
            bail!("the personal data was not redacted on its way out");
        }
        if !out.contains(EMAIL) || !out.contains(CARD) {
            bail!("the tokens were not restored on the way back");
        }

        println!("== audit log");
        print!(
            "{}",
            std::fs::read_to_string(self.dir.join("audit.jsonl")).unwrap_or_default()
        );
        println!(
            "== demo passed: steered, credential injected and redacted, PII redacted and restored, exfiltration and a destination refused"
        );
        Ok(())
    }

    /// curl in the sandbox; a placeholder, when given, as a bearer token.
    fn curl(&self, url: &str, placeholder: &str) -> anyhow::Result<String> {
        let auth = if placeholder.is_empty() {
            String::new()
        } else {
            format!(" -H 'Authorization: Bearer {placeholder}'")
        };
        let out = self.in_sandbox(&format!("curl -sS --max-time 10{auth} {url}"))?;
        Ok(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }

    fn admin(&self, args: &[&str]) -> anyhow::Result<std::process::Output> {
        Ok(Command::new(&self.sluice)
            .args(args)
            .arg("--admin-socket")
            .arg(self.dir.join("admin.sock"))
            .stderr(Stdio::null())
            .output()?)
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

/// An HTTP server on 127.0.0.1:0 that answers every request with the
/// request's own head and body, and logs them in `seen`.
fn serve_echo(seen: Arc<Mutex<Vec<String>>>) -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let request = read_request(&mut stream);
            seen.lock().expect("echo log").push(request.clone());
            let body = format!("upstream echo of your request:\n{request}\n");
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    Ok(port)
}

/// One request's head and (content-length) body, as text.
fn read_request(stream: &mut std::net::TcpStream) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return String::from_utf8_lossy(&buf).into_owned(),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + length {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    String::from_utf8_lossy(&buf)
        .replace("\r\n", "\n")
        .trim_end()
        .to_owned()
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
