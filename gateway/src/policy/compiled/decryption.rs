//! Whether a policy's TLS is decrypted when the policy does not say:
//! a policy that enables a stage reading requests (or an `allow_out` rule
//! with methods or paths) means it to see HTTPS (as the seeds have it),
//! one that enables none relays TLS unread.

use std::borrow::Cow;

use crate::policy::raw;

/// The policy's network section with `decide_without_decryption` set: as
/// written, else decrypted when a stage that reads requests is enabled (a
/// policy that turns one on means it to see HTTPS, as the seeds have it),
/// else relayed undecrypted; and the stage that turned it on.
pub(super) fn with_decryption_default(
    raw: &raw::Policy,
) -> (Cow<'_, raw::Network>, Option<&'static str>) {
    let mut network = Cow::Borrowed(&raw.network);
    if raw.network.decide_without_decryption.is_some() {
        return (network, None);
    }
    let reader = [
        ("pii", raw.pii.enabled),
        ("injection_defense", raw.injection_defense.enabled),
        ("transformations", !raw.transformations.is_empty()),
        ("credentials", !raw.credentials.is_empty()),
        // A rule with methods or paths decides each request it allows.
        (
            "network.allow_out",
            raw.network
                .allow_out
                .iter()
                .any(raw::Target::reads_requests),
        ),
    ]
    .into_iter()
    .find_map(|(section, on)| on.then_some(section));
    network.to_mut().decide_without_decryption = Some(reader.is_none());
    (network, reader)
}
