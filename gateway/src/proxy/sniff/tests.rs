use super::*;

/// A ClientHello captured from `openssl s_client -servername Example.COM`
/// (OpenSSL 3.0), one record.
const OPENSSL_HELLO: &str = "160301013801000134030343043eb9766ae35a95656791a689284c1893a75afaa3b07c6be329d84e4890c4203eb7beb9b60417a2063504850cec0a14b6062ec336c64ee53e5d17385b2ec8e6003e130213031301c02cc030009fcca9cca8ccaac02bc02f009ec024c028006bc023c0270067c00ac0140039c009c0130033009d009c003d003c0035002f00ff010000ad00000010000e00000b4578616d706c652e434f4d000b000403000102000a00160014001d0017001e0019001801000101010201030104002300000016000000170000000d002a0028040305030603080708080809080a080b080408050806040105010601030303010302040205020602002b0009080304030303020301002d00020101003300260024001d002097ca4b11f25db67a8372db4e5cf8a6da86aa4c777ec2b1a0210145805849d71a";

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn vec16(body: &[u8]) -> Vec<u8> {
    let mut out = u16::try_from(body.len())
        .expect("fits")
        .to_be_bytes()
        .to_vec();
    out.extend_from_slice(body);
    out
}

/// A server_name extension listing `(name_type, name)` entries.
fn sni_ext(names: &[(u8, &[u8])]) -> Vec<u8> {
    let mut list = Vec::new();
    for (kind, name) in names {
        list.push(*kind);
        list.extend(vec16(name));
    }
    let mut ext = vec![0x00, 0x00];
    ext.extend(vec16(&vec16(&list)));
    ext
}

/// A ClientHello handshake message with the given extension bytes
/// (`None`: no extensions block at all).
fn hello(extensions: Option<Vec<u8>>) -> Vec<u8> {
    let mut body = vec![0x03, 0x03];
    body.extend([7u8; 32]); // random
    body.push(0); // session id
    body.extend(vec16(&[0x13, 0x01])); // one suite
    body.extend([1, 0]); // null compression
    if let Some(ext) = extensions {
        body.extend(vec16(&ext));
    }
    let len = u32::try_from(body.len()).expect("fits").to_be_bytes();
    let mut msg = vec![HANDSHAKE_CLIENT_HELLO, len[1], len[2], len[3]];
    msg.extend(body);
    msg
}

/// Wraps a handshake stream in records of at most `chunk` bytes.
fn records(handshake: &[u8], chunk: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for piece in handshake.chunks(chunk) {
        out.extend([TLS_HANDSHAKE, 0x03, 0x01]);
        out.extend(vec16(piece));
    }
    out
}

/// A one-record hello whose server_name lists `names`.
fn named(names: &[(u8, &[u8])]) -> Vec<u8> {
    records(&hello(Some(sni_ext(names))), 1 << 14)
}

fn with_sni(name: &[u8]) -> Vec<u8> {
    named(&[(0, name)])
}

fn tls(sni: Option<&str>) -> Sniffed {
    Sniffed::Tls {
        sni: sni.map(str::to_owned),
        ech: false,
    }
}

fn bad(why: Unreadable) -> Sniffed {
    Sniffed::Unreadable(why)
}

fn http(host: Option<&str>) -> Sniffed {
    Sniffed::Http {
        host: host.map(str::to_owned),
    }
}

#[test]
fn tls_table() {
    let real = hex(OPENSSL_HELLO);
    let split_hello = records(&hello(Some(sni_ext(&[(0, b"a.test")]))), 7);
    let mut dup_ext = sni_ext(&[(0, b"a.test")]);
    dup_ext.extend(sni_ext(&[(0, b"b.test")]));
    let ems = vec![0x00, 0x17, 0x00, 0x00]; // extended_master_secret
    let mut ems_then_sni = ems.clone();
    ems_then_sni.extend(sni_ext(&[(0, b"x.test")]));
    let mut trailing = with_sni(b"a.test");
    trailing.extend(b"more bytes after the hello");
    let mut alert_between = records(&hello(Some(sni_ext(&[(0, b"a.test")]))), 20);
    alert_between.truncate(25);
    alert_between.extend([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28]);
    let mut huge = vec![
        TLS_HANDSHAKE,
        0x03,
        0x01,
        0x40,
        0x00,
        0x01,
        0x01,
        0x00,
        0x00,
    ];
    huge.extend([0u8; 100]);

    // An encrypted_client_hello extension (outer, a made-up payload).
    let mut ech = sni_ext(&[(0, b"public.test")]);
    ech.extend([0xfe, 0x0d]);
    ech.extend(vec16(&[
        0x00, 0x00, 0x01, 0x00, 0x01, 0x2a, 0x00, 0x00, 0x00, 0x00,
    ]));
    let ech_outer = Sniffed::Tls {
        sni: Some("public.test".to_owned()),
        ech: true,
    };

    #[rustfmt::skip]
    let cases: Vec<(&str, Vec<u8>, Sniffed)> = vec![
        ("openssl hello, lowercased sni", real.clone(), tls(Some("example.com"))),
        ("encrypted client hello offered", records(&hello(Some(ech)), 999), ech_outer),
        ("openssl hello cut short", real[..100].to_vec(), Sniffed::NeedMore),
        ("record header only", real[..5].to_vec(), Sniffed::NeedMore),
        ("first byte only", vec![TLS_HANDSHAKE], Sniffed::NeedMore),
        ("hello over many records", split_hello.clone(), tls(Some("a.test"))),
        ("split hello, first records", split_hello[..30].to_vec(), Sniffed::NeedMore),
        ("no extensions block", records(&hello(None), 999), tls(None)),
        ("extensions without sni", records(&hello(Some(ems)), 999), tls(None)),
        ("sni after another extension", records(&hello(Some(ems_then_sni)), 999), tls(Some("x.test"))),
        ("trailing dot removed", with_sni(b"a.test."), tls(Some("a.test"))),
        ("bytes after the hello ignored", trailing, tls(Some("a.test"))),
        ("underscore in sni", with_sni(b"a_b.test"), bad(Unreadable::TlsBadServerName)),
        ("empty label in sni", with_sni(b"a..test"), bad(Unreadable::TlsBadServerName)),
        ("empty sni", with_sni(b""), bad(Unreadable::TlsBadServerName)),
        ("just a dot", with_sni(b"."), bad(Unreadable::TlsBadServerName)),
        ("nul in sni", with_sni(b"a.test\0.evil"), bad(Unreadable::TlsBadServerName)),
        ("non-ascii sni", with_sni("é.test".as_bytes()), bad(Unreadable::TlsBadServerName)),
        ("label too long", with_sni(&[b'a'; 64]), bad(Unreadable::TlsBadServerName)),
        ("two host names", named(&[(0, b"a.test"), (0, b"b.test")]), bad(Unreadable::TlsBadServerName)),
        ("unknown name type", named(&[(1, b"a.test")]), bad(Unreadable::TlsBadServerName)),
        ("duplicate sni extension", records(&hello(Some(dup_ext)), 999), bad(Unreadable::TlsBadServerName)),
        ("alert between records", alert_between, bad(Unreadable::TlsMalformed)),
        ("not a client hello", records(&[0x02, 0, 0, 1, 0], 99), bad(Unreadable::TlsMalformed)),
        // Found by fuzzing: decided at the first record, undecided once a
        // second record's header had started.
        ("not a hello, next record begun", vec![TLS_HANDSHAKE, 3, 1, 0, 1, 0x02, TLS_HANDSHAKE, 3, 1, 0], bad(Unreadable::TlsMalformed)),
        ("bad record version", vec![TLS_HANDSHAKE, 0x02], bad(Unreadable::TlsMalformed)),
        ("tls 1.5 record", vec![TLS_HANDSHAKE, 0x03, 0x05], bad(Unreadable::TlsMalformed)),
        ("oversized record", vec![TLS_HANDSHAKE, 0x03, 0x01, 0x40, 0x01], bad(Unreadable::TlsMalformed)),
        ("empty record", vec![TLS_HANDSHAKE, 0x03, 0x01, 0x00, 0x00], bad(Unreadable::TlsMalformed)),
        ("hello longer than we buffer", huge, bad(Unreadable::TlsHelloTooLarge)),
        ("hello length lies short", records(&[1, 0, 0, 3, 3, 3, 0], 99), bad(Unreadable::TlsMalformed)),
        ("zero-length hello", records(&[1, 0, 0, 0], 99), bad(Unreadable::TlsMalformed)),
    ];
    for (name, input, want) in cases {
        assert_eq!(sniff(&input), want, "{name}");
        // However the bytes are cut, the first answer is the final one.
        for cut in 1..input.len() {
            let early = sniff(&input[..cut]);
            if early != Sniffed::NeedMore {
                assert_eq!(early, want, "{name}: decided at {cut} bytes");
            }
        }
    }
}

#[test]
fn every_prefix_of_a_hello_needs_more() {
    let real = hex(OPENSSL_HELLO);
    for cut in 0..real.len() {
        assert_eq!(sniff(&real[..cut]), Sniffed::NeedMore, "cut at {cut}");
    }
    let split = records(&hello(Some(sni_ext(&[(0, b"a.test")]))), 3);
    for cut in 0..split.len() {
        assert_eq!(
            sniff(&split[..cut]),
            Sniffed::NeedMore,
            "split cut at {cut}"
        );
    }
    assert_eq!(sniff(&split), tls(Some("a.test")));
}

#[test]
fn corrupted_hellos_never_panic() {
    let real = hex(OPENSSL_HELLO);
    for i in 0..real.len() {
        for flip in [0x01, 0x80, 0xff] {
            let mut bad = real.clone();
            bad[i] ^= flip;
            let _ = sniff(&bad);
        }
    }
}

#[test]
fn http_table() {
    #[rustfmt::skip]
    let cases: Vec<(&str, &[u8], Sniffed)> = vec![
        ("host header", b"GET / HTTP/1.1\r\nHost: Example.COM\r\n\r\n", http(Some("example.com"))),
        ("host with port", b"GET / HTTP/1.1\r\nhost: a.test:8080\r\n\r\n", http(Some("a.test"))),
        ("host with empty port", b"GET / HTTP/1.1\r\nHost: a.test:\r\n\r\n", http(Some("a.test"))),
        ("trailing dot", b"GET / HTTP/1.1\r\nHost: a.test.\r\n\r\n", http(Some("a.test"))),
        ("whitespace around host", b"GET / HTTP/1.1\r\nHost: \t a.test \t\r\n\r\n", http(Some("a.test"))),
        ("bare lf line ends", b"GET / HTTP/1.1\nHost: a.test\n\n", http(Some("a.test"))),
        ("ipv6 literal", b"GET / HTTP/1.1\r\nHost: [2001:DB8::1]:80\r\n\r\n", http(Some("2001:db8::1"))),
        ("ipv6 literal no port", b"GET / HTTP/1.1\r\nHost: [::1]\r\n\r\n", http(Some("::1"))),
        ("ipv4 literal", b"GET / HTTP/1.1\r\nHost: 10.0.0.1:80\r\n\r\n", http(Some("10.0.0.1"))),
        ("no host, http/1.0", b"GET / HTTP/1.0\r\n\r\n", http(None)),
        ("empty host", b"GET / HTTP/1.1\r\nHost:\r\n\r\n", http(None)),
        ("absolute form", b"GET http://A.test/x HTTP/1.1\r\n\r\n", http(Some("a.test"))),
        ("absolute form agrees", b"GET http://a.test:80/x HTTP/1.1\r\nHost: a.test\r\n\r\n", http(Some("a.test"))),
        ("absolute form disagrees", b"GET http://a.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n", bad(Unreadable::HttpHostMismatch)),
        ("absolute form userinfo", b"GET http://a.test@b.test/ HTTP/1.1\r\n\r\n", bad(Unreadable::HttpUserinfo)),
        ("absolute form, odd scheme", b"GET ftp://a.test/ HTTP/1.1\r\n\r\n", bad(Unreadable::HttpMalformed)),
        ("connect authority", b"CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n", http(Some("a.test"))),
        ("connect disagrees", b"CONNECT a.test:443 HTTP/1.1\r\nHost: b.test\r\n\r\n", bad(Unreadable::HttpHostMismatch)),
        ("asterisk form", b"OPTIONS * HTTP/1.1\r\nHost: a.test\r\n\r\n", http(Some("a.test"))),
        ("duplicate host", b"GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n", bad(Unreadable::HttpDuplicateHost)),
        ("duplicate same host", b"GET / HTTP/1.1\r\nHost: a.test\r\nHOST: a.test\r\n\r\n", bad(Unreadable::HttpDuplicateHost)),
        ("host with userinfo", b"GET / HTTP/1.1\r\nHost: u@a.test\r\n\r\n", bad(Unreadable::HttpUserinfo)),
        ("host with bad port", b"GET / HTTP/1.1\r\nHost: a.test:99999\r\n\r\n", bad(Unreadable::HttpBadHost)),
        ("host with space", b"GET / HTTP/1.1\r\nHost: a test\r\n\r\n", bad(Unreadable::HttpBadHost)),
        ("bad ipv6 literal", b"GET / HTTP/1.1\r\nHost: [nope]\r\n\r\n", bad(Unreadable::HttpBadHost)),
        ("relative target", b"GET x HTTP/1.1\r\nHost: a.test\r\n\r\n", bad(Unreadable::HttpMalformed)),
        ("headers incomplete", b"GET / HTTP/1.1\r\nHost: a.test\r\n", Sniffed::NeedMore),
        ("method only", b"POS", Sniffed::NeedMore),
        ("method and space", b"POST ", Sniffed::NeedMore),
        ("lowercase method", b"get / HTTP/1.1\r\n\r\n", bad(Unreadable::Unrecognised)),
        ("method too long", &[b'A'; 40], bad(Unreadable::Unrecognised)),
        ("http/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", bad(Unreadable::Http2Preface)),
        ("bad header line", b"GET / HTTP/1.1\r\nHo st: a\r\n\r\n", bad(Unreadable::HttpMalformed)),
        ("obs-fold", b"GET / HTTP/1.1\r\nHost: a.test\r\nX-A: 1\r\n 2\r\n\r\n", bad(Unreadable::HttpObsFold)),
        ("obs-fold with a tab", b"GET / HTTP/1.1\r\nX-A: 1\r\n\tHost: b.test\r\n\r\n", bad(Unreadable::HttpObsFold)),
        ("obs-fold, bare lf", b"GET / HTTP/1.1\nHost: a.test\n 2\n\n", bad(Unreadable::HttpObsFold)),
        ("host and port, userinfo", b"GET / HTTP/1.1\r\nHost: a.test:80@b.test\r\n\r\n", bad(Unreadable::HttpUserinfo)),
        ("head then body", b"POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 2\r\n\r\nhi", http(Some("a.test"))),
    ];
    for (name, input, want) in cases {
        assert_eq!(sniff(input), want, "{name}");
    }
}

#[test]
fn other_bytes_table() {
    let cases: Vec<(&str, &[u8], Sniffed)> = vec![
        ("empty", b"", Sniffed::NeedMore),
        (
            "ssh banner",
            b"SSH-2.0-OpenSSH_9.6\r\n",
            bad(Unreadable::Unrecognised),
        ),
        ("binary", &[0x00, 0x01, 0x02], bad(Unreadable::Unrecognised)),
        (
            "sslv2 hello",
            &[0x80, 0x2e, 0x01],
            bad(Unreadable::Unrecognised),
        ),
        ("lowercase first byte", b"x", bad(Unreadable::Unrecognised)),
        ("space first", b" GET", bad(Unreadable::Unrecognised)),
    ];
    for (name, input, want) in cases {
        assert_eq!(sniff(input), want, "{name}");
    }
}

#[test]
fn incomplete_at_the_cap_is_opaque() {
    let mut head = b"GET / HTTP/1.1\r\nX: ".to_vec();
    head.resize(MAX_SNIFF_BYTES - 1, b'a');
    assert_eq!(sniff(&head), Sniffed::NeedMore);
    head.push(b'a');
    assert_eq!(sniff(&head), bad(Unreadable::HttpHeadTooLarge));
}

/// Hellos past one record's 16 KiB (large key shares, padding) are
/// reassembled up to [`MAX_CLIENT_HELLO`]; a longer one is refused, never
/// waved through.
#[test]
fn large_hellos_are_reassembled_up_to_the_bound() {
    let padded = |pad: usize| {
        // The padding extension (21), then the name.
        let mut ext = vec![0x00, 0x15];
        ext.extend(vec16(&vec![0u8; pad]));
        ext.extend(sni_ext(&[(0, b"big.test")]));
        hello(Some(ext))
    };
    for (pad, chunk) in [(20_000, 1 << 14), (40_000, 1 << 14), (40_000, 1000)] {
        let wire = records(&padded(pad), chunk);
        assert!(wire.len() < MAX_SNIFF_BYTES, "{pad}");
        assert_eq!(sniff(&wire), tls(Some("big.test")), "{pad} in {chunk}");
        assert_eq!(sniff(&wire[..wire.len() - 1]), Sniffed::NeedMore, "{pad}");
    }
    // A hello one byte past the bound is refused on its header alone.
    let past = u32::try_from(MAX_CLIENT_HELLO - HANDSHAKE_HEADER + 1).expect("fits");
    let [_, a, b, c] = past.to_be_bytes();
    let too_big = [
        TLS_HANDSHAKE,
        0x03,
        0x01,
        0x40,
        0x00,
        HANDSHAKE_CLIENT_HELLO,
        a,
        b,
        c,
    ];
    assert_eq!(sniff(&too_big), bad(Unreadable::TlsHelloTooLarge));
    // A hello within the bound in records so small that their headers
    // overflow the buffer: refused at the cap too.
    let tiny = records(&padded(40_000), 4);
    assert_eq!(
        sniff(&tiny[..MAX_SNIFF_BYTES]),
        bad(Unreadable::TlsHelloTooLarge)
    );
}

/// What a client that stops (or goes quiet) mid-way had sent is refused
/// with the reason of what it was becoming.
#[test]
fn cut_short_names_what_was_coming() {
    let real = hex(OPENSSL_HELLO);
    let cases: Vec<(&[u8], Unreadable)> = vec![
        (b"", Unreadable::Silent),
        (&real[..40], Unreadable::TlsIncomplete),
        (
            b"POST /upload HTTP/1.1\r\nHost: a.te",
            Unreadable::HttpIncomplete,
        ),
    ];
    for (prefix, want) in cases {
        assert_eq!(sniff(prefix), Sniffed::NeedMore, "{want:?}");
        assert_eq!(Unreadable::cut_short(prefix), want);
        assert_eq!(want.is_http(), want == Unreadable::HttpIncomplete);
    }
}
