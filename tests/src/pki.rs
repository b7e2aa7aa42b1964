//! A throwaway PKI for upstream test servers: a CA (rcgen, ECDSA P-256)
//! that issues server certificates for test names, and the small digests
//! the HTTPS upstream needs (SHA-256 through rustls' ring provider, so a
//! gigabyte hashes at assembly speed even in a debug build; SHA-1 and
//! base64 for the WebSocket handshake).

use std::path::Path;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SerialNumber, date_time_ymd,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A certificate authority for one test. Sluice trusts the upstream CA
/// (config `tls.upstream_ca_files`); an "evil" CA is one it does not.
pub struct TestCa {
    common_name: String,
    pem: String,
    der: CertificateDer<'static>,
    issuer: Issuer<'static, KeyPair>,
}

/// A server certificate (leaf, then the CA) and its key.
pub struct Issued {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
    /// The leaf and the CA, PEM, in that order.
    pub chain_pem: String,
}

/// How a leaf certificate is made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Validity {
    /// Valid from 2020 to 2090.
    #[default]
    Current,
    /// Valid in 2020 only: expired now.
    Expired,
}

impl TestCa {
    /// A new CA whose subject is `CN=<common_name>`.
    pub fn new(common_name: &str) -> TestCa {
        let key = KeyPair::generate().expect("generate CA key");
        let mut params = CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.not_before = date_time_ymd(2020, 1, 1);
        params.not_after = date_time_ymd(2090, 1, 1);
        params.serial_number = Some(random_serial());
        let cert = params.self_signed(&key).expect("self-sign CA");
        TestCa {
            common_name: common_name.to_owned(),
            pem: cert.pem(),
            der: cert.der().clone(),
            issuer: Issuer::new(params, key),
        }
    }

    /// The CA Sluice is told to trust for upstreams.
    pub fn upstream() -> TestCa {
        TestCa::new("sluice-e2e upstream CA")
    }

    /// A CA nobody trusts.
    pub fn evil() -> TestCa {
        TestCa::new("sluice-e2e evil CA")
    }

    pub fn common_name(&self) -> &str {
        &self.common_name
    }

    pub fn pem(&self) -> &str {
        &self.pem
    }

    pub fn der(&self) -> &CertificateDer<'static> {
        &self.der
    }

    /// Writes the CA certificate (PEM) to `path`.
    pub fn write_pem(&self, path: &Path) {
        std::fs::write(path, &self.pem)
            .unwrap_or_else(|e| panic!("write CA to {}: {e}", path.display()));
    }

    /// A current server certificate for `names` (DNS names or addresses).
    pub fn issue(&self, names: &[&str]) -> Issued {
        self.issue_with(names, Validity::Current)
    }

    pub fn issue_with(&self, names: &[&str], validity: Validity) -> Issued {
        let key = KeyPair::generate().expect("generate leaf key");
        let sans: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(sans).expect("leaf names");
        params.distinguished_name = rcgen::DistinguishedName::new();
        if let Some(first) = names.first() {
            params.distinguished_name.push(DnType::CommonName, *first);
        }
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        params.serial_number = Some(random_serial());
        (params.not_before, params.not_after) = match validity {
            Validity::Current => (date_time_ymd(2020, 1, 1), date_time_ymd(2090, 1, 1)),
            Validity::Expired => (date_time_ymd(2020, 1, 1), date_time_ymd(2021, 1, 1)),
        };
        let cert = params.signed_by(&key, &self.issuer).expect("sign leaf");
        let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        Issued {
            chain: vec![cert.der().clone(), self.der.clone()],
            key: key_der,
            chain_pem: format!("{}{}", cert.pem(), self.pem),
        }
    }
}

fn random_serial() -> SerialNumber {
    let mut bytes = [0u8; 16];
    for chunk in bytes.chunks_mut(4) {
        chunk.copy_from_slice(&crate::random_u32().to_ne_bytes());
    }
    // Positive, and no leading zero byte to be trimmed.
    bytes[0] = (bytes[0] & 0x7f) | 0x40;
    SerialNumber::from_slice(&bytes)
}

/// Incremental SHA-256 (ring's implementation, reached through rustls).
pub struct Sha256(Box<dyn rustls::crypto::hash::Context>);

impl Sha256 {
    pub fn new() -> Sha256 {
        let suite = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256
            .tls13()
            .expect("a TLS 1.3 suite");
        Sha256(suite.common.hash_provider.start())
    }

    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    /// Lower-case hex, as Python's `hexdigest()`.
    pub fn hex(self) -> String {
        hex(self.0.finish().as_ref())
    }
}

impl Default for Sha256 {
    fn default() -> Self {
        Sha256::new()
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-1 (FIPS 180-4), only for the WebSocket accept key: short inputs,
/// speed irrelevant.
pub fn sha1(data: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [
        0x6745_2301,
        0xEFCD_AB89,
        0x98BA_DCFE,
        0x1032_5476,
        0xC3D2_E1F0,
    ];
    let mut message = data.to_vec();
    message.push(0x80);
    while message.len() % 64 != 56 {
        message.push(0);
    }
    message.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in message.chunks(64) {
        let mut w = [0u32; 80];
        for (i, word) in block.chunks(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, wi) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
                20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let t = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*wi);
            (e, d, c, b, a) = (d, c, b.rotate_left(30), a, t);
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e]) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 20];
    for (i, word) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&word.to_be_bytes());
    }
    out
}

/// Standard base64 with padding.
pub fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 0x3f) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `Sec-WebSocket-Accept` for a `Sec-WebSocket-Key` (RFC 6455 §4.2.2).
pub fn websocket_accept(key: &str) -> String {
    let mut input = key.trim().as_bytes().to_vec();
    input.extend_from_slice(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    base64(&sha1(&input))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn websocket_accept_matches_rfc_6455_example() {
        assert_eq!(
            websocket_accept("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn digests_match_known_vectors() {
        assert_eq!(
            hex(&sha1(b"abc")),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        let mut sha = Sha256::new();
        sha.update(b"ab");
        sha.update(b"c");
        assert_eq!(
            sha.hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
    }

    #[test]
    fn issued_chain_is_leaf_then_ca() {
        let ca = TestCa::new("unit CA");
        let issued = ca.issue(&["a.test", "b.test"]);
        assert_eq!(issued.chain.len(), 2);
        assert_eq!(&issued.chain[1], ca.der());
        assert_eq!(issued.chain_pem.matches("BEGIN CERTIFICATE").count(), 2);
    }
}
