//! The kinds of personal data and secrets the scanner reports, named as in
//! the policy's `pii.types`.

use std::{fmt, str::FromStr};

/// One detectable kind. The order of the variants is the order of
/// [`Kind::ALL`]; `Kind::rank` decides which finding wins an overlap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Email,
    Phone,
    Ssn,
    CreditCard,
    Iban,
    IpAddress,
    AwsAccessKey,
    GithubToken,
    OpenaiKey,
    AnthropicKey,
    SlackToken,
    StripeKey,
    Jwt,
    PrivateKey,
    GenericSecret,
}

impl Kind {
    pub const ALL: [Kind; 15] = [
        Kind::Email,
        Kind::Phone,
        Kind::Ssn,
        Kind::CreditCard,
        Kind::Iban,
        Kind::IpAddress,
        Kind::AwsAccessKey,
        Kind::GithubToken,
        Kind::OpenaiKey,
        Kind::AnthropicKey,
        Kind::SlackToken,
        Kind::StripeKey,
        Kind::Jwt,
        Kind::PrivateKey,
        Kind::GenericSecret,
    ];

    /// The name used in policies, findings and the evaluation corpus.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Email => "email",
            Kind::Phone => "phone",
            Kind::Ssn => "ssn",
            Kind::CreditCard => "credit_card",
            Kind::Iban => "iban",
            Kind::IpAddress => "ip_address",
            Kind::AwsAccessKey => "aws_access_key",
            Kind::GithubToken => "github_token",
            Kind::OpenaiKey => "openai_key",
            Kind::AnthropicKey => "anthropic_key",
            Kind::SlackToken => "slack_token",
            Kind::StripeKey => "stripe_key",
            Kind::Jwt => "jwt",
            Kind::PrivateKey => "private_key",
            Kind::GenericSecret => "generic_secret",
        }
    }

    /// Which of two overlapping findings is kept: the higher rank. Shapes
    /// with a strong checksum or a unique prefix outrank loose ones, so a
    /// card number inside an IBAN, or a key caught by the generic rule, is
    /// reported once under its precise kind.
    pub(crate) fn rank(self) -> u8 {
        match self {
            Kind::PrivateKey => 15,
            Kind::Jwt => 14,
            Kind::AnthropicKey => 13,
            Kind::OpenaiKey => 12,
            Kind::GithubToken => 11,
            Kind::SlackToken => 10,
            Kind::StripeKey => 9,
            Kind::AwsAccessKey => 8,
            Kind::Iban => 7,
            Kind::CreditCard => 6,
            Kind::Ssn => 5,
            Kind::Email => 4,
            Kind::IpAddress => 3,
            Kind::Phone => 2,
            Kind::GenericSecret => 1,
        }
    }

    pub(crate) fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not one of [`Kind::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown PII type `{0}` (known: email, phone, ssn, credit_card, iban, ip_address, aws_access_key, github_token, openai_key, anthropic_key, slack_token, stripe_key, jwt, private_key, generic_secret)"
)]
pub struct UnknownKind(pub String);

impl FromStr for Kind {
    type Err = UnknownKind;

    fn from_str(name: &str) -> Result<Kind, UnknownKind> {
        Kind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
            .ok_or_else(|| UnknownKind(name.to_string()))
    }
}

/// A set of kinds, as a bit mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KindSet(u32);

impl KindSet {
    pub fn all() -> KindSet {
        Kind::ALL.into_iter().collect()
    }

    pub fn contains(self, kind: Kind) -> bool {
        self.0 & kind.bit() != 0
    }

    pub fn insert(&mut self, kind: Kind) {
        self.0 |= kind.bit();
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn iter(self) -> impl Iterator<Item = Kind> {
        Kind::ALL.into_iter().filter(move |k| self.contains(*k))
    }
}

impl FromIterator<Kind> for KindSet {
    fn from_iter<I: IntoIterator<Item = Kind>>(iter: I) -> KindSet {
        let mut set = KindSet::default();
        for kind in iter {
            set.insert(kind);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for kind in Kind::ALL {
            assert_eq!(kind.as_str().parse::<Kind>(), Ok(kind));
        }
        assert!("passport".parse::<Kind>().is_err());
    }

    #[test]
    fn ranks_are_distinct() {
        let mut ranks: Vec<u8> = Kind::ALL.iter().map(|k| k.rank()).collect();
        ranks.sort_unstable();
        ranks.dedup();
        assert_eq!(ranks.len(), Kind::ALL.len());
    }
}
