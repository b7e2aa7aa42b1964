//! What compiling the `network` section checks beyond each target's own
//! form: `passthrough` names, rules with methods or paths that could never
//! be enforced over HTTPS, and the same target listed twice.

use super::{
    CompileError, Target,
    rules::Rule,
    target::{self, Problem},
};

/// Whether `name` is strictly below `base` (`a.b.c` below `b.c`).
pub(super) fn below(name: &str, base: &str) -> bool {
    name.len() > base.len()
        && name.ends_with(base)
        && name.as_bytes()[name.len() - base.len() - 1] == b'.'
}

/// `network.passthrough`: exact names and wildcard bases.
pub(super) type Passthrough = (Vec<Box<str>>, Vec<Box<str>>);

pub(super) fn compile_passthrough(
    written: &[String],
    errors: &mut Vec<CompileError>,
) -> Passthrough {
    let (mut exact, mut wildcard) = (Vec::new(), Vec::new());
    for (i, text) in written.iter().enumerate() {
        match target::parse_name(text) {
            Ok(Target::Exact(name)) => exact.push(name),
            Ok(Target::Wildcard(base)) => wildcard.push(base),
            Ok(_) => errors.push(CompileError {
                path: format!("network.passthrough[{i}]"),
                message: format!("`{text}` is not a name"),
                hint: Some("passthrough takes names (`example.com`, `*.example.com`): what is not decrypted is chosen by the name the client sends".to_owned()),
            }),
            Err(problem) => errors.push(problem.at(format!("network.passthrough[{i}]"))),
        }
    }
    (exact, wildcard)
}

/// Why a rule with methods or paths could never be enforced over HTTPS:
/// TLS is relayed undecrypted (`decide_without_decryption: true`) on a
/// port HTTPS uses, or the names it matches are in `passthrough`. (TLS
/// that reaches such a rule undecrypted anyway, on another port or to an
/// address a passthrough name resolves to, is refused by `decide`.)
pub(super) fn unenforceable(
    target: &Target,
    ports: &[u16],
    decrypts: bool,
    (exact, wildcard): &Passthrough,
) -> Option<Problem> {
    if !decrypts && (ports.is_empty() || ports.contains(&HTTPS_PORT)) {
        let reach = match ports.is_empty() {
            true => "every port, 443 included",
            false => "port 443",
        };
        return Some(Problem::new(
            format!(
                "methods and paths could never be enforced over HTTPS: `decide_without_decryption: true` relays TLS undecrypted, and this rule covers {reach}"
            ),
            "drop `decide_without_decryption` (the policy then decrypts TLS to read requests), or list only plain-HTTP ports in this rule's `ports` (TLS to them is then refused)",
        ));
    }
    let overlaps = |name: &str, is_wildcard: bool| {
        exact
            .iter()
            .find(|p| match is_wildcard {
                false => ***p == *name,
                true => below(p, name),
            })
            .map(|p| p.to_string())
            .or_else(|| {
                wildcard
                    .iter()
                    .find(|base| {
                        below(name, base)
                            || (is_wildcard && (***base == *name || below(base, name)))
                    })
                    .map(|base| format!("*.{base}"))
            })
    };
    let passthrough = match target {
        Target::Exact(name) => overlaps(name, false),
        Target::Wildcard(base) => overlaps(base, true),
        Target::Net(_) | Target::All => None,
    }?;
    Some(Problem::new(
        format!(
            "methods and paths could never be enforced over HTTPS: `{passthrough}` is in network.passthrough, whose TLS is never decrypted"
        ),
        "remove the name from `passthrough`, or drop `methods`, `paths` and `access` from this rule",
    ))
}

/// The port HTTPS is served on, which a rule that decides per request may
/// not cover when TLS is not decrypted.
const HTTPS_PORT: u16 = 443;

pub(super) fn duplicate(label: &str, (allow, ask): (bool, bool), first: &Rule) -> CompileError {
    let first_label = &first.label;
    if (first.allow, first.ask) == (allow, ask) {
        CompileError {
            path: label.into(),
            message: format!("duplicate of {first_label}"),
            hint: Some("remove one of them".into()),
        }
    } else {
        CompileError {
            path: label.into(),
            message: format!(
                "the same target and ports are in {first_label}; the more permissive \
                 list would always win (allow_out, then ask_out, then deny_out)"
            ),
            hint: Some("keep it in one list only".into()),
        }
    }
}
