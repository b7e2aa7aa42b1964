//! Running commands: on the host, or inside a sandbox (a cgroup and
//! optionally a network namespace), always with a timeout.
//!
//! A sandboxed command is started as
//! `sh -c 'echo $$ > CGROUP/cgroup.procs && exec nsenter --net=NETNS -- "$@"'`:
//! the shell moves itself into the cgroup before anything else runs, and
//! `nsenter` (not `ip netns exec`, which remounts /sys) enters the namespace.

use std::{
    ffi::{OsStr, OsString},
    fmt,
    io::Read,
    os::unix::process::{CommandExt, ExitStatusExt},
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    thread::JoinHandle,
    time::{Duration, Instant},
};

use crate::{TestCgroup, TestNetns, python3};

/// Default limit for a command in a sandbox.
pub const SANDBOX_TIMEOUT: Duration = Duration::from_secs(20);

/// What a finished (or killed) command did.
#[derive(Debug, Clone)]
pub struct Output {
    /// The command line, for messages.
    pub cmd: String,
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The command ran past its timeout and was killed.
    pub timed_out: bool,
}

impl Output {
    pub fn success(&self) -> bool {
        !self.timed_out && self.status.success()
    }

    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// Panics (showing everything) unless the command exited 0.
    #[track_caller]
    pub fn expect_success(&self, what: &str) -> &Output {
        assert!(self.success(), "{what}: command failed\n{self}");
        self
    }

    /// Panics unless the command ran to completion and exited non-zero.
    #[track_caller]
    pub fn expect_failure(&self, what: &str) -> &Output {
        assert!(
            !self.timed_out && !self.status.success(),
            "{what}: command was expected to fail\n{self}"
        );
        self
    }

    /// The last stdout line parsed as JSON (scripts print one JSON result).
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        let text = self.stdout_str();
        let line = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or_else(|| panic!("no output to parse as JSON\n{self}"));
        serde_json::from_str(line).unwrap_or_else(|e| panic!("stdout is not JSON ({e})\n{self}"))
    }
}

impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "  command: {}", self.cmd)?;
        if self.timed_out {
            writeln!(f, "  status: killed after timeout")?;
        } else if let Some(signal) = self.status.signal() {
            writeln!(f, "  status: killed by signal {signal}")?;
        } else {
            writeln!(f, "  status: exit {}", self.status.code().unwrap_or(-1))?;
        }
        writeln!(f, "  stdout: {}", self.stdout_str().trim_end())?;
        write!(f, "  stderr: {}", self.stderr_str().trim_end())
    }
}

/// A command started in the background; `wait` collects it.
pub struct Running {
    cmd: String,
    child: Child,
    stdout: Option<JoinHandle<Vec<u8>>>,
    stderr: Option<JoinHandle<Vec<u8>>>,
    deadline: Instant,
}

impl Running {
    fn start(mut command: Command, timeout: Duration) -> Running {
        let cmd = describe(&command);
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so a timeout kills it and its children.
            .process_group(0);
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("spawn `{cmd}`: {e}"));
        let stdout = child.stdout.take().map(|mut pipe| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = pipe.read_to_end(&mut buf);
                buf
            })
        });
        let stderr = child.stderr.take().map(|mut pipe| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = pipe.read_to_end(&mut buf);
                buf
            })
        });
        Running {
            cmd,
            child,
            stdout,
            stderr,
            deadline: Instant::now() + timeout,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Has it exited (without collecting it)?
    pub fn finished(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Waits for exit, killing the process group at the deadline.
    pub fn wait(mut self) -> Output {
        let mut timed_out = false;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() >= self.deadline => {
                    timed_out = true;
                    self.kill_group();
                    break self.child.wait().expect("wait for killed child");
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => panic!("wait for `{}`: {e}", self.cmd),
            }
        };
        // Children that outlived the leader may hold the pipes open; give
        // them a moment, then kill the group.
        let grace = Instant::now() + Duration::from_secs(1);
        let open = |h: &Option<JoinHandle<Vec<u8>>>| h.as_ref().is_some_and(|h| !h.is_finished());
        while (open(&self.stdout) || open(&self.stderr)) && Instant::now() < grace {
            std::thread::sleep(Duration::from_millis(5));
        }
        if open(&self.stdout) || open(&self.stderr) {
            self.kill_group();
        }
        let stdout = self.stdout.take().map(|h| h.join().unwrap_or_default());
        let stderr = self.stderr.take().map(|h| h.join().unwrap_or_default());
        Output {
            cmd: self.cmd.clone(),
            status,
            stdout: stdout.unwrap_or_default(),
            stderr: stderr.unwrap_or_default(),
            timed_out,
        }
    }

    fn kill_group(&self) {
        let pgid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.stdout.is_some() {
            self.kill_group();
            let _ = self.child.wait();
        }
    }
}

fn describe(command: &Command) -> String {
    let mut parts = vec![command.get_program().to_string_lossy().into_owned()];
    parts.extend(command.get_args().map(|a| {
        let a = a.to_string_lossy();
        if a.contains(' ') || a.contains('\n') || a.is_empty() {
            if a.len() > 80 {
                "'<script>'".to_owned()
            } else {
                format!("'{a}'")
            }
        } else {
            a.into_owned()
        }
    }));
    parts.join(" ")
}

/// Runs a command on the host (outside any sandbox) with a timeout.
pub fn host<S: AsRef<OsStr>>(args: &[S], timeout: Duration) -> Output {
    let (program, rest) = args.split_first().expect("a command");
    let mut command = Command::new(program);
    command.args(rest);
    Running::start(command, timeout).wait()
}

/// Where and how a sandboxed command runs.
#[derive(Debug, Clone)]
pub struct Sandboxed {
    cgroup: PathBuf,
    netns: Option<PathBuf>,
    timeout: Duration,
}

/// Commands that run inside `cgroup`.
pub fn in_cgroup(cgroup: &TestCgroup) -> Sandboxed {
    Sandboxed::at(cgroup.path())
}

impl Sandboxed {
    /// Commands that run inside the cgroup directory `cgroup`.
    pub fn at(cgroup: &Path) -> Sandboxed {
        Sandboxed {
            cgroup: cgroup.to_owned(),
            netns: None,
            timeout: SANDBOX_TIMEOUT,
        }
    }

    /// ... and inside this network namespace.
    pub fn netns(mut self, netns: &TestNetns) -> Sandboxed {
        self.netns = Some(netns.path());
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Sandboxed {
        self.timeout = timeout;
        self
    }

    fn command<S: AsRef<OsStr>>(&self, args: &[S]) -> Command {
        let procs = self.cgroup.join("cgroup.procs");
        let mut command = Command::new("sh");
        match &self.netns {
            None => {
                command.args([
                    OsStr::new("-c"),
                    OsStr::new(r#"echo $$ > "$1" || exit 125; shift; exec "$@""#),
                    OsStr::new("sh"),
                    procs.as_os_str(),
                ]);
            }
            Some(netns) => {
                let mut net = OsString::from("--net=");
                net.push(netns);
                command.args([
                    OsStr::new("-c"),
                    OsStr::new(
                        r#"echo $$ > "$1" || exit 125; net=$2; shift 2; exec nsenter "$net" -- "$@""#,
                    ),
                    OsStr::new("sh"),
                    procs.as_os_str(),
                    net.as_os_str(),
                ]);
            }
        }
        command.args(args);
        command
    }

    /// Runs `args` in the sandbox and waits (killing it at the timeout).
    pub fn run<S: AsRef<OsStr>>(&self, args: &[S]) -> Output {
        self.spawn(args).wait()
    }

    /// Starts `args` in the sandbox without waiting.
    pub fn spawn<S: AsRef<OsStr>>(&self, args: &[S]) -> Running {
        Running::start(self.command(args), self.timeout)
    }

    /// Runs `python3 -c script args...` in the sandbox.
    pub fn python(&self, script: &str, args: &[&str]) -> Output {
        self.spawn_python(script, args).wait()
    }

    /// Starts `python3 -c script args...` in the sandbox without waiting.
    pub fn spawn_python(&self, script: &str, args: &[&str]) -> Running {
        let python = python3();
        let mut all: Vec<&OsStr> = vec![python.as_os_str(), OsStr::new("-c"), OsStr::new(script)];
        all.extend(args.iter().map(OsStr::new));
        self.spawn(&all)
    }
}
