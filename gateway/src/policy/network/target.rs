//! Destination strings (`example.com`, `*.example.com`, `10.0.0.0/8:5432`,
//! `[2001:db8::1]:443`, `ALL_TRAFFIC`) parsed once into targets, with an
//! error and a hint for every way they can be wrong; a map target's
//! `methods`, `paths` and `access` compiled into its [`RequestRule`], its
//! `binaries` into the executables it admits.

use super::*;
use crate::apps::pattern::PathPattern;

/// A problem not yet placed at a path.
pub(super) struct Problem {
    message: String,
    hint: Option<String>,
}

impl Problem {
    pub(super) fn new(message: impl Into<String>, hint: impl Into<String>) -> Problem {
        Problem {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }

    pub(super) fn at(self, path: impl Into<String>) -> CompileError {
        CompileError {
            path: path.into(),
            message: self.message,
            hint: self.hint,
        }
    }
}

/// A compiled target: what it matches, its ports, and on `allow_out`
/// what the requests on a connection it wins may ask for and which
/// programs' connections it admits.
pub(super) struct Compiled {
    pub(super) target: Target,
    pub(super) ports: Box<[u16]>,
    pub(super) request: Option<RequestRule>,
    pub(super) binaries: Option<Box<[PathPattern]>>,
}

pub(super) fn compile_target(
    target: &raw::Target,
    label: &str,
    allow: bool,
    errors: &mut Vec<CompileError>,
) -> Option<Compiled> {
    let spec = match target {
        raw::Target::Short(text) => {
            return match parse_target(text) {
                Ok((target, port)) => Some(Compiled {
                    target,
                    ports: port.into_iter().collect(),
                    request: None,
                    binaries: None,
                }),
                Err(problem) => {
                    errors.push(problem.at(label));
                    None
                }
            };
        }
        raw::Target::Full(spec) => spec,
    };
    let before = errors.len();
    let request = compile_request(spec, label, allow, errors);
    let binaries = compile_binaries(spec, label, allow, errors);
    let target = match parse_target(&spec.to) {
        Ok((target, None)) => Some(target),
        Ok((_, Some(_))) if spec.ports.is_empty() => {
            let problem = Problem::new("`to` takes no port", "move the port into `ports`");
            errors.push(problem.at(format!("{label}.to")));
            None
        }
        Ok((_, Some(_))) => {
            let problem = Problem::new(
                "a port in `to` and a `ports` list",
                "keep one: list every port in `ports`",
            );
            errors.push(problem.at(format!("{label}.to")));
            None
        }
        Err(problem) => {
            errors.push(problem.at(format!("{label}.to")));
            None
        }
    };
    for (index, &port) in spec.ports.iter().enumerate() {
        if port == 0 {
            let problem = Problem::new("port 0", PORT_HINT);
            errors.push(problem.at(format!("{label}.ports[{index}]")));
        }
    }
    if target == Some(Target::All) && !spec.ports.is_empty() {
        let problem = Problem::new(
            "ALL_TRAFFIC takes no ports",
            "for some ports everywhere, list `0.0.0.0/0` and `::/0` with those ports",
        );
        errors.push(problem.at(format!("{label}.ports")));
    }
    let mut ports = spec.ports.clone();
    ports.sort_unstable();
    ports.dedup();
    target
        .filter(|_| errors.len() == before)
        .map(|target| Compiled {
            target,
            ports: ports.into(),
            request,
            binaries,
        })
}

/// `binaries` of one map target: on `allow_out`, the executables whose
/// connections it admits, each an absolute path glob.
fn compile_binaries(
    spec: &raw::TargetSpec,
    label: &str,
    allow: bool,
    errors: &mut Vec<CompileError>,
) -> Option<Box<[PathPattern]>> {
    let binaries = spec.binaries.as_ref()?;
    let at = format!("{label}.binaries");
    if label.contains("ask_out") {
        let problem = Problem::new(
            "`binaries` on an ask_out rule",
            "a person is asked about the destination; to admit only some programs, give `binaries` to an allow_out rule",
        );
        errors.push(problem.at(at));
        return None;
    }
    if !allow {
        let problem = Problem::new(
            "`binaries` on a deny_out rule",
            "a deny_out rule refuses every program; to admit only some, give `binaries` to the allow_out rule",
        );
        errors.push(problem.at(at));
        return None;
    }
    if binaries.is_empty() {
        let problem = Problem::new(
            "an empty `binaries` list would refuse every program",
            "list the executables allowed (`/usr/bin/git`), or leave `binaries` out for any program",
        );
        errors.push(problem.at(at));
        return None;
    }
    let mut compiled = Vec::with_capacity(binaries.len());
    for (i, text) in binaries.iter().enumerate() {
        match PathPattern::parse(text) {
            Ok(pattern) => compiled.push(pattern),
            Err(message) => errors.push(CompileError {
                path: format!("{at}[{i}]"),
                message,
                hint: Some(
                    "write an absolute path such as `/usr/bin/git` or `/usr/lib/git-core/*` (`*` one segment, `**` any)".to_owned(),
                ),
            }),
        }
    }
    Some(compiled.into_boxed_slice())
}

/// The first of `methods`, `paths` and `access` a map target gives, where
/// an error about them all points.
pub(super) fn request_key(spec: &raw::TargetSpec) -> Option<&'static str> {
    let keys = [
        ("methods", spec.methods.is_some()),
        ("paths", spec.paths.is_some()),
        ("access", spec.access.is_some()),
    ];
    keys.into_iter()
        .find(|(_, given)| *given)
        .map(|(key, _)| key)
}

/// The methods an `access` stands for.
const READ_ONLY: [&str; 3] = ["GET", "HEAD", "OPTIONS"];

/// `methods`, `paths` and `access` of one map target: a [`RequestRule`]
/// on `allow_out`, an error on `deny_out`.
fn compile_request(
    spec: &raw::TargetSpec,
    label: &str,
    allow: bool,
    errors: &mut Vec<CompileError>,
) -> Option<RequestRule> {
    let first = request_key(spec)?;
    if label.contains("ask_out") {
        let problem = Problem::new(
            format!("`{first}` on an ask_out rule"),
            "a person is asked about whole connections; to bound their requests, put the destination in allow_out with `methods:`, `paths:` or `access: read_only`",
        );
        errors.push(problem.at(format!("{label}.{first}")));
        return None;
    }
    if !allow {
        let problem = Problem::new(
            format!("`{first}` on a deny_out rule"),
            "a deny_out rule refuses whole connections; to refuse some methods or paths, allow only the others on an allow_out rule (`methods:`, `paths:` or `access: read_only`)",
        );
        errors.push(problem.at(format!("{label}.{first}")));
        return None;
    }
    let before = errors.len();
    let methods = match (&spec.methods, spec.access) {
        (Some(_), Some(_)) => {
            let problem = Problem::new(
                "`access` and `methods` both given",
                "keep one: `access: read_only` is `methods: [GET, HEAD, OPTIONS]`",
            );
            errors.push(problem.at(format!("{label}.access")));
            None
        }
        (None, Some(raw::Access::ReadOnly)) => Some(READ_ONLY.map(Box::from).into()),
        (Some(methods), None) => compile_methods(methods, label, errors),
        (None, None) => None,
    };
    let paths = spec.paths.as_ref().and_then(|paths| {
        if paths.is_empty() {
            let problem = Problem::new(
                "an empty `paths` list would refuse every request",
                "list the paths allowed (`/repos/**`), or leave `paths` out for every path",
            );
            errors.push(problem.at(format!("{label}.paths")));
            return None;
        }
        let mut compiled = Vec::with_capacity(paths.len());
        for (i, text) in paths.iter().enumerate() {
            match PathPattern::parse(text) {
                Ok(pattern) => compiled.push(pattern),
                Err(message) => errors.push(CompileError {
                    path: format!("{label}.paths[{i}]"),
                    message,
                    hint: Some("write a path such as `/repos/*/issues` or `/api/**` (`*` one segment, `**` any)".to_owned()),
                }),
            }
        }
        Some(compiled.into_boxed_slice())
    });
    (errors.len() == before).then(|| RequestRule {
        label: label.into(),
        methods,
        paths,
    })
}

fn compile_methods(
    methods: &[String],
    label: &str,
    errors: &mut Vec<CompileError>,
) -> Option<Box<[Box<str>]>> {
    if methods.is_empty() {
        let problem = Problem::new(
            "an empty `methods` list would refuse every request",
            "list the methods allowed (`[GET, POST]`), or leave `methods` out for every method",
        );
        errors.push(problem.at(format!("{label}.methods")));
        return None;
    }
    let mut compiled: Vec<Box<str>> = Vec::with_capacity(methods.len());
    for (i, text) in methods.iter().enumerate() {
        let upper = text.trim().to_ascii_uppercase();
        // A token (RFC 9110), as a request line carries it.
        let token = !upper.is_empty()
            && upper
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if upper == "*" || !token {
            let hint = match upper.as_str() {
                "*" => "leave `methods` out for every method",
                _ => "write a method such as GET, POST or DELETE",
            };
            errors.push(
                Problem::new(format!("`{text}` is not a method"), hint)
                    .at(format!("{label}.methods[{i}]")),
            );
            continue;
        }
        if !compiled.iter().any(|m| **m == *upper) {
            compiled.push(upper.into());
        }
    }
    Some(compiled.into_boxed_slice())
}

/// One target string: the target and its inline port.
pub(super) fn parse_target(text: &str) -> Result<(Target, Option<u16>), Problem> {
    if text.trim().is_empty() {
        return Err(Problem::new(
            "empty target",
            "write a name, `*.name`, an address, a CIDR or ALL_TRAFFIC",
        ));
    }
    if text.contains(char::is_whitespace) {
        return Err(Problem::new(
            format!("whitespace in `{text}`"),
            "a target is one word",
        ));
    }
    if text == ALL_TRAFFIC {
        return Ok((Target::All, None));
    }
    if let Some(port) = text.strip_prefix("ALL_TRAFFIC:") {
        return Err(Problem::new(
            "ALL_TRAFFIC takes no port",
            format!("for one port everywhere, write `0.0.0.0/0:{port}` and `[::/0]:{port}`"),
        ));
    }
    if text.eq_ignore_ascii_case(ALL_TRAFFIC) {
        return Err(Problem::new(
            format!("`{text}` is not a target"),
            "write ALL_TRAFFIC in capitals",
        ));
    }
    if let Some((_, rest)) = text.split_once("://") {
        return Err(Problem::new(
            format!("`{text}` is a URL"),
            format!(
                "write the host alone, such as `{}`",
                rest.split('/').next().unwrap_or(rest)
            ),
        ));
    }
    let (host, port, bracketed) = split_port(text)?;
    let target = parse_host(host)?;
    if bracketed && !matches!(target, Target::Net(IpNet::V6(_))) {
        return Err(Problem::new(
            format!("`{text}`: brackets are only for IPv6"),
            format!("write `{host}` without brackets"),
        ));
    }
    Ok((target, port))
}

/// Host part, inline port, and whether the host was bracketed.
pub(super) fn split_port(text: &str) -> Result<(&str, Option<u16>, bool), Problem> {
    if let Some(rest) = text.strip_prefix('[') {
        let Some((inner, after)) = rest.split_once(']') else {
            return Err(Problem::new(
                format!("`{text}` has no closing `]`"),
                "write IPv6 with a port as `[2001:db8::1]:443`",
            ));
        };
        let port = match after.strip_prefix(':') {
            _ if after.is_empty() => None,
            Some(port) => Some(parse_port(port)?),
            None => {
                return Err(Problem::new(
                    format!("`{after}` after `]`"),
                    "only `:PORT` may follow `]`",
                ));
            }
        };
        return Ok((inner, port, true));
    }
    match text.split_once(':') {
        Some((host, port)) if !port.contains(':') => Ok((host, Some(parse_port(port)?), false)),
        // Bare IPv6: its colons are not a port.
        _ => Ok((text, None, false)),
    }
}

pub(super) fn parse_port(text: &str) -> Result<u16, Problem> {
    if text.is_empty() {
        return Err(Problem::new("no port after `:`", PORT_HINT));
    }
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Problem::new(format!("`{text}` is not a port"), PORT_HINT));
    }
    match text.parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err(Problem::new(
            format!("port {text} is out of range"),
            PORT_HINT,
        )),
    }
}

pub(super) fn parse_host(host: &str) -> Result<Target, Problem> {
    if let Some((addr, len)) = host.split_once('/') {
        return parse_cidr(host, addr, len);
    }
    if let Ok(addr) = host.parse::<IpAddr>() {
        return Ok(net_target(IpNet::from(addr)));
    }
    if let Some(addr) = ssrf::parse_ip_like(host) {
        return Err(Problem::new(
            format!("`{host}` is an address in a shorthand form"),
            format!("write `{addr}`"),
        ));
    }
    parse_name(host)
}

pub(super) fn parse_cidr(text: &str, addr: &str, len: &str) -> Result<Target, Problem> {
    let cidr_hint = "write an address and a prefix length, such as `10.0.0.0/8` or `2001:db8::/32`";
    let Ok(addr) = addr.parse::<IpAddr>() else {
        return Err(Problem::new(
            format!("`{text}`: `{addr}` is not an IP address"),
            cidr_hint,
        ));
    };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let prefix = Some(len)
        .filter(|len| !len.is_empty() && len.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|len| len.parse::<u8>().ok())
        .filter(|prefix| *prefix <= max);
    let Some(net) = prefix.and_then(|prefix| IpNet::new(addr, prefix).ok()) else {
        return Err(Problem::new(
            format!("`{text}`: the prefix length must be 0-{max}"),
            cidr_hint,
        ));
    };
    if net.network() != addr {
        return Err(Problem::new(
            format!("`{text}` has host bits set"),
            format!("write `{}`", net.trunc()),
        ));
    }
    Ok(net_target(net))
}

/// IPv4-mapped IPv6 rules become IPv4, the form destinations are compared in.
pub(super) fn net_target(net: IpNet) -> Target {
    let mapped = match net {
        IpNet::V6(v6) if v6.prefix_len() >= 96 => v6
            .network()
            .to_ipv4_mapped()
            .and_then(|v4: Ipv4Addr| Ipv4Net::new(v4, v6.prefix_len() - 96).ok().map(IpNet::V4)),
        _ => None,
    };
    Target::Net(mapped.unwrap_or(net))
}

pub(super) fn parse_name(host: &str) -> Result<Target, Problem> {
    let lower = host.to_ascii_lowercase();
    let name = lower.strip_suffix('.').unwrap_or(&lower);
    if !name.is_ascii() {
        return Err(Problem::new(
            format!("`{host}` is not ASCII"),
            "write internationalized names in their `xn--` (punycode) form",
        ));
    }
    if name == "*" {
        return Err(Problem::new(
            "`*` alone is not a target",
            "write ALL_TRAFFIC for every destination",
        ));
    }
    if let Some(base) = name.strip_prefix("*.")
        && !base.contains('*')
    {
        check_labels(base)?;
        return Ok(Target::Wildcard(base.into()));
    }
    if name.contains('*') {
        let base = name.rsplit_once('*').map_or(name, |(_, base)| base);
        let base = base.trim_start_matches('.');
        return Err(Problem::new(
            format!("bad wildcard `{host}`"),
            format!("`*` may only be the whole first label: write `*.{base}`"),
        ));
    }
    if let Some(rest) = name.strip_prefix('.') {
        return Err(Problem::new(
            format!("`{host}` starts with a dot"),
            format!("write `*.{rest}` for the names below it, or `{rest}` for the name itself"),
        ));
    }
    check_labels(name)?;
    Ok(Target::Exact(name.into()))
}

pub(super) fn check_labels(name: &str) -> Result<(), Problem> {
    let label_hint = "a label is 1-63 letters, digits, `-` or `_`, not starting or ending with `-`";
    if name.len() > 253 {
        return Err(Problem::new(
            format!("name of {} characters", name.len()),
            "a name is at most 253 characters",
        ));
    }
    for label in name.split('.') {
        if label.is_empty() {
            return Err(Problem::new(
                format!("`{name}` has an empty label"),
                "remove the extra dot",
            ));
        }
        if let Some(bad) = label
            .chars()
            .find(|&c| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        {
            return Err(Problem::new(
                format!("`{bad}` is not allowed in a name"),
                label_hint,
            ));
        }
        if label.len() > 63 || label.starts_with('-') || label.ends_with('-') {
            return Err(Problem::new(format!("bad label `{label}`"), label_hint));
        }
    }
    if name
        .rsplit('.')
        .next()
        .is_some_and(|last| last.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(Problem::new(
            format!("`{name}` ends in a numeric label: neither a name nor an address"),
            "write an IPv4 address as four decimal numbers, such as `192.0.2.1`",
        ));
    }
    Ok(())
}
