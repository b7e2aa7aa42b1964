//! What interception tests share: a daemon whose one sandbox runs under
//! an intercepting policy and trusts a test upstream CA, and curl / Python
//! runs in that sandbox with their results parsed.

use std::{
    net::{IpAddr, Ipv4Addr},
    time::Duration,
};

use serde_json::{Value, json};

use crate::{
    Daemon, DaemonBuilder, HttpsUpstream, TestCa, TestCgroup, in_cgroup,
    run::{Output, SANDBOX_TIMEOUT},
    tls_scripts::spec_arg,
};

pub const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// The `allow_out` entries that let a sandbox reach `name` on a loopback
/// upstream: the name, and the address rule the SSRF guard wants.
pub fn allow_loopback(name: &str, port: u16) -> [String; 2] {
    [name.to_owned(), format!("127.0.0.0/8:{port}")]
}

/// A default-deny policy that intercepts (`decide_without_decryption:
/// false`), allowing `allow`; `extra` keys are merged into `network`.
pub fn intercepting_policy(allow: &[String], extra: Value) -> Value {
    let mut network = json!({
        "allow_out": allow,
        "deny_out": ["ALL_TRAFFIC"],
        "decide_without_decryption": false,
    });
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            network[k] = v;
        }
    }
    json!({ "network": network })
}

/// A daemon with policy `p` for sandbox `sb1`, `names` resolving to
/// 127.0.0.1, upstreams verified against `upstream_ca` only.
pub struct World {
    pub daemon: Daemon,
    pub sb1: TestCgroup,
    /// Sluice's interception CA (what the sandbox trusts).
    pub sluice_ca: String,
    /// The test upstream CA, as written for the daemon.
    pub upstream_ca: String,
}

impl World {
    pub fn start(upstream_ca: &TestCa, names: &[&str], policy: Value) -> World {
        World::start_with(upstream_ca, names, policy, |_| {})
    }

    /// As [`World::start`], with a last look at the builder.
    pub fn start_with(
        upstream_ca: &TestCa,
        names: &[&str],
        policy: Value,
        tweak: impl FnOnce(&mut DaemonBuilder),
    ) -> World {
        let mut builder = DaemonBuilder::new();
        let sb1 = builder.cgroup("sb1");
        for name in names {
            builder.host(name, &[LOCALHOST]);
        }
        builder
            .trust_upstream_ca(upstream_ca)
            .policy_doc("p", policy)
            .sandbox("sb1", &sb1, None, "p");
        tweak(&mut builder);
        let daemon = builder.start();
        let sluice_ca = daemon.wait_ca_pem().to_string_lossy().into_owned();
        let upstream_ca = daemon.upstream_ca_path().to_string_lossy().into_owned();
        World {
            daemon,
            sb1,
            sluice_ca,
            upstream_ca,
        }
    }

    /// The common case: an HTTPS upstream on 127.0.0.1 for `name` (a
    /// certificate from `ca`), and a world whose policy intercepts and
    /// allows exactly that name.
    pub fn intercepting(ca: &TestCa, name: &str) -> (HttpsUpstream, World) {
        let upstream = HttpsUpstream::v4(&[name], ca);
        let policy = intercepting_policy(&allow_loopback(name, upstream.port()), json!({}));
        let world = World::start(ca, &[name], policy);
        (upstream, world)
    }

    /// Runs a `tls_scripts` program in the sandbox with `spec`.
    pub fn python(&self, script: &str, spec: &Value, timeout: Duration) -> Output {
        let arg = spec_arg(spec, self.daemon.dir());
        in_cgroup(&self.sb1)
            .timeout(timeout)
            .python(script, &[&arg])
    }

    /// Runs curl in the sandbox (see [`curl_args`]).
    pub fn curl(&self, args: &[String]) -> Curl {
        Curl::parse(in_cgroup(&self.sb1).run(args))
    }

    /// A curl command line trusting only Sluice's CA.
    pub fn curl_https(&self, url: &str, extra: &[&str]) -> Vec<String> {
        curl_args(Some(&self.sluice_ca), url, extra)
    }

    /// The sum of `selector`, 0 when no series exists yet.
    pub fn metric(&self, selector: &str) -> f64 {
        self.daemon.metric(selector).unwrap_or(0.0)
    }
}

/// `curl -sS -v` with a time limit, trusting only `cafile` (when given),
/// printing the body, then a line `CODE VERSION`.
pub fn curl_args(cafile: Option<&str>, url: &str, extra: &[&str]) -> Vec<String> {
    let max_time = SANDBOX_TIMEOUT.as_secs().saturating_sub(5).to_string();
    let mut args: Vec<String> = ["curl", "-sS", "-v", "-g", "--max-time", &max_time]
        .map(str::to_owned)
        .to_vec();
    if let Some(cafile) = cafile {
        args.extend(["--cacert".to_owned(), cafile.to_owned()]);
    }
    args.extend(["-w".to_owned(), "\n%{http_code} %{http_version}".to_owned()]);
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args.push(url.to_owned());
    args
}

/// A finished curl: the body, status code and HTTP version it printed.
pub struct Curl {
    pub body: String,
    pub code: u16,
    pub version: String,
    pub out: Output,
}

impl Curl {
    /// Parses the output of a curl run with [`curl_args`].
    pub fn parse(out: Output) -> Curl {
        let text = out.stdout_str();
        let (body, tail) = text.rsplit_once('\n').unwrap_or(("", text.as_str()));
        let mut fields = tail.split_whitespace();
        let code = fields.next().and_then(|c| c.parse().ok()).unwrap_or(0);
        let version = fields.next().unwrap_or_default().to_owned();
        Curl {
            body: body.to_owned(),
            code,
            version,
            out,
        }
    }

    /// The body parsed as JSON (panics, showing everything, when it is not).
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("curl's body is not JSON ({e}):\n{}", self.out))
    }

    /// The `*  issuer: ...` line of `curl -v` (the certificate it was shown).
    pub fn issuer(&self) -> Option<String> {
        self.out
            .stderr_str()
            .lines()
            .find_map(|l| l.trim_start_matches('*').trim().strip_prefix("issuer:"))
            .map(|s| s.trim().to_owned())
    }
}

impl std::fmt::Display for Curl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.out)
    }
}
