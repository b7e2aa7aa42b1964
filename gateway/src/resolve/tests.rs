use std::collections::BTreeMap;

use hickory_proto::{ProtoError, op::Query};

use super::*;

fn config() -> ResolverConfig {
    let mut hosts = BTreeMap::new();
    let ip = |s: &str| s.parse::<IpAddr>().expect("test ip");
    hosts.insert(
        "api.test".to_owned(),
        vec![ip("192.0.2.1"), ip("2001:db8::1")],
    );
    hosts.insert(
        "API.test.".to_owned(),
        vec![ip("192.0.2.2"), ip("192.0.2.1")],
    );
    hosts.insert("v4.test".to_owned(), vec![ip("192.0.2.4")]);
    hosts.insert("gone.test".to_owned(), vec![]);
    ResolverConfig {
        hosts,
        nameservers: Vec::new(),
        system: false,
    }
}

fn ips(list: &[&str]) -> Vec<IpAddr> {
    list.iter().map(|s| s.parse().expect("test ip")).collect()
}

#[tokio::test]
async fn lookup_ip_table() {
    let resolver = Resolver::static_only(&config().hosts);
    let cases: Vec<(&str, Option<Vec<IpAddr>>)> = vec![
        (
            "api.test",
            Some(ips(&["192.0.2.2", "192.0.2.1", "2001:db8::1"])),
        ),
        (
            "Api.TEST.",
            Some(ips(&["192.0.2.2", "192.0.2.1", "2001:db8::1"])),
        ),
        ("v4.test", Some(ips(&["192.0.2.4"]))),
        ("192.0.2.9", Some(ips(&["192.0.2.9"]))),
        ("::1", Some(ips(&["::1"]))),
        ("gone.test", None),
        ("unknown.test", None),
        ("sub.api.test", None),
    ];
    for (name, want) in cases {
        match (resolver.lookup_ip(name).await, want) {
            (Ok(got), Some(want)) => assert_eq!(got, want, "{name}"),
            (Err(ResolveError::NotFound(n)), None) => assert_eq!(n, name),
            (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
        }
    }
}

#[tokio::test]
async fn lookup_table() {
    let resolver = Resolver::static_only(&config().hosts);
    let cases: Vec<(&str, RecordType, Option<Vec<&str>>)> = vec![
        (
            "api.test",
            RecordType::A,
            Some(vec!["192.0.2.2", "192.0.2.1"]),
        ),
        ("api.test.", RecordType::AAAA, Some(vec!["2001:db8::1"])),
        ("V4.test", RecordType::A, Some(vec!["192.0.2.4"])),
        ("v4.test", RecordType::AAAA, Some(vec![])),
        ("v4.test", RecordType::MX, Some(vec![])),
        ("v4.test", RecordType::HTTPS, Some(vec![])),
        ("gone.test", RecordType::A, Some(vec![])),
        ("unknown.test", RecordType::A, None),
    ];
    for (name, rtype, want) in cases {
        match (resolver.lookup(name, rtype).await, want) {
            (Ok(records), Some(want)) => {
                let got: Vec<String> = records
                    .iter()
                    .map(|r| {
                        assert_eq!(r.ttl(), STATIC_TTL, "{name}");
                        assert_eq!(r.record_type(), rtype, "{name}");
                        assert!(r.name().is_fqdn(), "{name}");
                        r.data().to_string()
                    })
                    .collect();
                assert_eq!(got, want, "{name} {rtype}");
            }
            (Err(ResolveError::NotFound(_)), None) => {}
            (got, want) => panic!("{name} {rtype}: got {got:?}, want {want:?}"),
        }
    }
}

#[tokio::test]
async fn answers_keep_the_question_case() {
    let resolver = Resolver::static_only(&config().hosts);
    let records = resolver
        .lookup("ApI.TeSt", RecordType::A)
        .await
        .expect("static");
    assert_eq!(records[0].name().to_ascii(), "ApI.TeSt.");
}

#[tokio::test]
async fn invalid_names_are_refused() {
    let resolver = Resolver::static_only(&config().hosts);
    let long = "a".repeat(64);
    let got = resolver.lookup(&long, RecordType::A).await;
    assert!(matches!(got, Err(ResolveError::InvalidName(_))), "{got:?}");
}

#[test]
fn new_does_no_io_and_needs_no_runtime() {
    // Configured nameservers on a port nothing listens on: building must
    // not connect (there is no runtime here to connect with).
    let mut with_servers = config();
    with_servers.nameservers = vec!["127.0.0.1:9".parse().expect("addr")];
    let resolver = Resolver::new(&with_servers).expect("builds");
    assert!(resolver.upstream.is_some());
    // The system configuration may or may not exist here; either way new
    // succeeds.
    Resolver::new(&config()).expect("builds");
}

#[tokio::test]
async fn static_names_never_reach_upstream() {
    // An upstream on a closed port would fail or time out; static names
    // must answer without it.
    let mut with_servers = config();
    with_servers.nameservers = vec!["127.0.0.1:9".parse().expect("addr")];
    let resolver = Resolver::new(&with_servers).expect("builds");
    let got = resolver
        .lookup("v4.test", RecordType::AAAA)
        .await
        .expect("nodata");
    assert!(got.is_empty());
    let got = resolver.lookup_ip("api.test").await.expect("static");
    assert_eq!(got.len(), 3);
}

#[test]
fn classify_table() {
    let nx = |code| {
        hickory_resolver::ResolveError::from(ProtoError::nx_error(
            Box::new(Query::new()),
            None,
            None,
            None,
            code,
            true,
            None,
        ))
    };
    let cases = [
        ("nodata", nx(ResponseCode::NoError), Upstream::NoData),
        ("nxdomain", nx(ResponseCode::NXDomain), Upstream::NxDomain),
        ("servfail", nx(ResponseCode::ServFail), Upstream::Failed),
        ("refused", nx(ResponseCode::Refused), Upstream::Failed),
        (
            "timeout",
            ProtoError::from(ProtoErrorKind::Timeout).into(),
            Upstream::Failed,
        ),
        (
            "no connections",
            ProtoError::from(ProtoErrorKind::NoConnections).into(),
            Upstream::Failed,
        ),
        (
            "message",
            hickory_resolver::ResolveError::from("boom"),
            Upstream::Failed,
        ),
    ];
    for (name, err, want) in cases {
        assert_eq!(classify(&err), want, "{name}");
    }
}

/// A one-socket upstream on 127.0.0.1 that answers A 192.0.2.7 for every
/// name but `missing.test.` (NXDOMAIN), and counts the queries it saw.
async fn fake_upstream() -> (SocketAddr, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use hickory_proto::op::{Message, MessageType};
    let socket = tokio::net::UdpSocket::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = socket.local_addr().expect("addr");
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = seen.clone();
    tokio::spawn(async move {
        let mut buf = [0u8; 1500];
        while let Ok((n, from)) = socket.recv_from(&mut buf).await {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let Ok(query) = Message::from_vec(&buf[..n]) else {
                continue;
            };
            let mut reply = Message::new();
            reply
                .set_id(query.id())
                .set_message_type(MessageType::Response);
            reply.add_queries(query.queries().to_vec());
            let q = &query.queries()[0];
            if q.name().to_ascii() == "missing.test." {
                reply.set_response_code(ResponseCode::NXDomain);
            } else if q.query_type() == RecordType::A {
                let a = rdata::A::new(192, 0, 2, 7);
                reply.add_answer(Record::from_rdata(q.name().clone(), 60, RData::A(a)));
            }
            let _ = socket.send_to(&reply.to_vec().expect("encode"), from).await;
        }
    });
    (addr, seen)
}

#[tokio::test]
async fn unknown_names_are_forwarded_to_the_configured_nameservers() {
    let (upstream, seen) = fake_upstream().await;
    let mut config = config();
    config.nameservers = vec![upstream];
    let resolver = Resolver::new(&config).expect("resolver");

    let addrs = resolver
        .lookup_ip("elsewhere.test")
        .await
        .expect("forwarded");
    assert_eq!(addrs, vec!["192.0.2.7".parse::<IpAddr>().expect("ip")]);
    let records = resolver
        .lookup("elsewhere.test", RecordType::A)
        .await
        .expect("forwarded");
    assert_eq!(records.len(), 1);
    let err = resolver
        .lookup_ip("missing.test")
        .await
        .expect_err("nxdomain");
    assert!(matches!(err, ResolveError::NotFound(_)), "{err}");

    let before = seen.load(std::sync::atomic::Ordering::SeqCst);
    let _ = resolver.lookup_ip("api.test").await.expect("static");
    assert_eq!(
        seen.load(std::sync::atomic::Ordering::SeqCst),
        before,
        "static names never reach the upstream"
    );
}
