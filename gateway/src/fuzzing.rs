//! What the fuzz targets (`fuzz/`) reach that the crate keeps private,
//! built only with the `fuzzing` feature. Most parsers they drive are
//! public already (`proxy::sniff`, `intercept::hygiene`, `dns`,
//! `dns_guard`, `redact`, `content`, `policy::load`, `explicit::token`);
//! the SigV4 signer's inputs are private to the credential schemes, so it
//! is reached through one function that fixes the keys and the time.

pub use crate::credentials::sigv4::sign_for_fuzzing as sigv4_sign;
