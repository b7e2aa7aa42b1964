use std::{collections::BTreeMap, net::IpAddr};

use hickory_proto::rr::{Name, RData, Record, RecordType};

use super::*;
use crate::resolve::ResolverConfig;

fn resolver() -> Resolver {
    let mut hosts = BTreeMap::new();
    let ip = |s: &str| s.parse::<IpAddr>().expect("test ip");
    hosts.insert(
        "api.test".to_owned(),
        vec![ip("192.0.2.1"), ip("2001:db8::1")],
    );
    hosts.insert("v4.test".to_owned(), vec![ip("192.0.2.4")]);
    // Enough addresses that the answer cannot fit 512 bytes.
    let many = (1..=40).map(|i| IpAddr::from([198, 51, 100, i])).collect();
    hosts.insert("many.test".to_owned(), many);
    Resolver::static_only(&hosts)
}

fn query(name: &str, rtype: RecordType, edns: bool) -> Vec<u8> {
    let mut message = Message::new();
    message
        .set_id(0xbeef)
        .set_message_type(MessageType::Query)
        .set_op_code(OpCode::Query)
        .set_recursion_desired(true)
        .add_query(Query::query(Name::from_ascii(name).expect("name"), rtype));
    if edns {
        let mut e = Edns::new();
        e.set_max_payload(1232);
        message.set_edns(e);
    }
    message.to_vec().expect("encodable")
}

fn parse(bytes: &[u8]) -> Message {
    Message::from_vec(bytes).expect("reply parses")
}

fn addresses(message: &Message) -> Vec<String> {
    message
        .answers()
        .iter()
        .map(|r| r.data().to_string())
        .collect()
}

#[tokio::test]
async fn query_table() {
    let resolver = resolver();
    use ResponseCode::{NXDomain, NoError};
    #[rustfmt::skip]
    let cases: Vec<(&str, RecordType, ResponseCode, &str, Vec<&str>)> = vec![
        ("api.test.", RecordType::A, NoError, "answered", vec!["192.0.2.1"]),
        ("API.test.", RecordType::AAAA, NoError, "answered", vec!["2001:db8::1"]),
        // A v4-only static name: NODATA, not a forward.
        ("v4.test.", RecordType::AAAA, NoError, "answered", vec![]),
        // No upstream to ask (static-only resolver, or no resolv.conf):
        // NXDOMAIN, not SERVFAIL.
        ("unknown.test.", RecordType::A, NXDomain, "nxdomain", vec![]),
    ];
    for (name, rtype, code, want_label, want) in cases {
        let (bytes, label) = answer(&query(name, rtype, false), &resolver, &Open).await;
        assert_eq!(label, want_label, "{name}");
        let reply = parse(&bytes);
        assert_eq!(reply.id(), 0xbeef, "{name}");
        assert_eq!(reply.message_type(), MessageType::Response, "{name}");
        assert!(
            reply.recursion_desired() && reply.recursion_available(),
            "{name}"
        );
        assert_eq!(reply.response_code(), code, "{name}");
        assert_eq!(reply.queries(), query_of(name, rtype).as_slice(), "{name}");
        assert_eq!(addresses(&reply), want, "{name}");
        assert!(!reply.truncated(), "{name}");
    }
}

fn query_of(name: &str, rtype: RecordType) -> Vec<Query> {
    vec![Query::query(Name::from_ascii(name).expect("name"), rtype)]
}

#[tokio::test]
async fn answer_echoes_question_case() {
    let (bytes, _) = answer(
        &query("ApI.TeSt.", RecordType::A, false),
        &resolver(),
        &Open,
    )
    .await;
    let reply = parse(&bytes);
    assert_eq!(reply.answers()[0].name().to_ascii(), "ApI.TeSt.");
    assert!(matches!(reply.answers()[0].data(), RData::A(_)));
}

#[tokio::test]
async fn large_answers_truncate_without_edns() {
    let resolver = resolver();
    let (bytes, label) = answer(&query("many.test.", RecordType::A, false), &resolver, &Open).await;
    assert_eq!(label, "answered");
    assert!(bytes.len() <= CLASSIC_UDP_PAYLOAD);
    let reply = parse(&bytes);
    assert!(reply.truncated());
    assert!(reply.answers().is_empty());

    let (bytes, _) = answer(&query("many.test.", RecordType::A, true), &resolver, &Open).await;
    let reply = parse(&bytes);
    assert!(!reply.truncated());
    assert_eq!(reply.answers().len(), 40);
    assert_eq!(reply.max_payload(), MAX_UDP_PAYLOAD);
}

#[tokio::test]
async fn bad_datagrams_table() {
    let resolver = resolver();
    let good = query("api.test.", RecordType::A, false);
    let mut as_response = good.clone();
    as_response[2] |= 0x80;
    let mut body_cut = good.clone();
    body_cut.truncate(good.len() - 3);
    let mut two_questions = Message::new();
    two_questions
        .set_id(7)
        .add_query(Query::query(
            Name::from_ascii("a.test.").expect("n"),
            RecordType::A,
        ))
        .add_query(Query::query(
            Name::from_ascii("b.test.").expect("n"),
            RecordType::A,
        ));
    let two_questions = two_questions.to_vec().expect("encodable");
    let mut no_question = good[..DNS_HEADER_LEN].to_vec();
    no_question[5] = 0; // qdcount = 0
    let mut status = good.clone();
    status[2] = (status[2] & 0x87) | (2 << 3); // opcode STATUS
    let mut chaos = Message::new();
    let mut q = Query::query(
        Name::from_ascii("version.bind.").expect("n"),
        RecordType::TXT,
    );
    q.set_query_class(DNSClass::CH);
    chaos.set_id(9).add_query(q);
    let chaos = chaos.to_vec().expect("encodable");

    use ResponseCode::{FormErr, NotImp};
    let garbage_body = [&good[..DNS_HEADER_LEN], &[0xff; 20][..]].concat();
    // (case, datagram, reply's rcode or None for no reply, label)
    #[rustfmt::skip]
    let cases: Vec<(&str, Vec<u8>, Option<ResponseCode>, &str)> = vec![
        ("empty", vec![], None, "malformed"),
        ("short garbage", b"\xde\xad\xbe\xef".to_vec(), None, "malformed"),
        ("a response", as_response, None, "malformed"),
        ("body cut short", body_cut, Some(FormErr), "malformed"),
        ("garbage after header", garbage_body, Some(FormErr), "malformed"),
        ("two questions", two_questions, Some(FormErr), "malformed"),
        ("no question", no_question, Some(FormErr), "malformed"),
        ("status opcode", status, Some(NotImp), "notimp"),
        ("chaos class", chaos, Some(NotImp), "notimp"),
    ];
    for (name, datagram, want, want_label) in cases {
        let (bytes, label) = answer(&datagram, &resolver, &Open).await;
        assert_eq!(label, want_label, "{name}");
        match want {
            None => assert!(bytes.is_empty(), "{name}: no reply expected"),
            Some(code) => {
                let reply = parse(&bytes);
                assert_eq!(reply.response_code(), code, "{name}");
                assert_eq!(reply.id(), u16::from_be_bytes([datagram[0], datagram[1]]));
                assert_eq!(reply.message_type(), MessageType::Response, "{name}");
                assert!(reply.answers().is_empty(), "{name}");
            }
        }
    }
}

#[tokio::test]
async fn random_bytes_never_panic() {
    let resolver = resolver();
    let good = query("api.test.", RecordType::A, true);
    // Deterministic corruption of every byte of a real query.
    for i in 0..good.len() {
        for flip in [0x01, 0x40, 0xff] {
            let mut bad = good.clone();
            bad[i] ^= flip;
            let _ = answer(&bad, &resolver, &Open).await;
        }
    }
}

#[tokio::test]
async fn serve_answers_and_counts() {
    let server = UdpSocket::bind("127.0.0.1:0").await.expect("bind");
    let addr = server.local_addr().expect("addr");
    let metrics = Arc::new(Metrics::new());
    let task = tokio::spawn(serve(
        server,
        Arc::new(resolver()),
        metrics.clone(),
        Arc::new(Open),
    ));
    let client = UdpSocket::bind("127.0.0.1:0").await.expect("bind");
    client
        .send_to(&query("api.test.", RecordType::A, false), addr)
        .await
        .expect("send");
    let mut buf = [0u8; 1024];
    let (len, _) = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        client.recv_from(&mut buf),
    )
    .await
    .expect("reply in time")
    .expect("recv");
    assert_eq!(addresses(&parse(&buf[..len])), vec!["192.0.2.1"]);
    // The counter is bumped before the reply is sent.
    assert_eq!(
        metrics.dns_queries.with_label_values(&["answered"]).get(),
        1
    );
    task.abort();
}

/// A gate that leaves an outside name to the address rules, as a policy
/// allowing only addresses does, keeping 203.0.113.0/24.
struct ByAddress;

impl Gate for ByAddress {
    fn admit(&self, _: &str, _: RecordType) -> Admission {
        Admission::ResolveFiltered
    }
    fn keep(&self, ip: IpAddr) -> bool {
        matches!(ip, IpAddr::V4(v4) if v4.octets()[..3] == [203, 0, 113])
    }
}

/// A zone the sandbox's queries reach (through recursion): A answers come
/// as a CNAME chain whose target carries data, other types with data of
/// their own. Records the names it was asked, as asked.
async fn tunnel_zone() -> (std::net::SocketAddr, Arc<std::sync::Mutex<Vec<String>>>) {
    use hickory_proto::rr::rdata::{A as ARecord, CNAME, HINFO, MX, NULL};
    let socket = UdpSocket::bind("127.0.0.1:0").await.expect("bind");
    let addr = socket.local_addr().expect("addr");
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    tokio::spawn(async move {
        let mut buf = [0u8; 4096];
        while let Ok((n, peer)) = socket.recv_from(&mut buf).await {
            let Ok(request) = Message::from_vec(&buf[..n]) else {
                continue;
            };
            let question = request.queries()[0].clone();
            seen.lock().expect("lock").push(question.name().to_ascii());
            let mut response = Message::new();
            response
                .set_id(request.id())
                .set_message_type(MessageType::Response)
                .set_recursion_desired(true)
                .set_recursion_available(true)
                .add_query(question.clone());
            let name = question.name().clone();
            let target = Name::from_ascii("c2-data-goes-here.evil.example.").expect("name");
            let data = match question.query_type() {
                RecordType::A => {
                    let cname = RData::CNAME(CNAME(target.clone()));
                    response.add_answer(Record::from_rdata(name.clone(), 60, cname));
                    let a = RData::A(ARecord::new(203, 0, 113, 9));
                    response.add_answer(Record::from_rdata(target.clone(), 60, a));
                    None
                }
                RecordType::MX => Some(RData::MX(MX::new(10, target))),
                RecordType::HINFO => {
                    Some(RData::HINFO(HINFO::new("x".repeat(200), "y".repeat(200))))
                }
                code => Some(RData::Unknown {
                    code,
                    rdata: NULL::with(vec![0x42; 400]),
                }),
            };
            if let Some(data) = data {
                response.add_answer(Record::from_rdata(name, 60, data));
            }
            let _ = socket
                .send_to(&response.to_vec().expect("encodable"), peer)
                .await;
        }
    });
    (addr, asked)
}

#[tokio::test]
async fn filtered_answers_are_addresses_owned_by_the_name_asked() {
    let (zone, asked) = tunnel_zone().await;
    let resolver = Resolver::new(&ResolverConfig {
        hosts: BTreeMap::new(),
        nameservers: vec![zone],
        system: false,
    })
    .expect("resolver");
    // The chain is flattened: one A record, for the name asked, as asked.
    let (bytes, label) = answer(
        &query("Q1.Evil.Example.", RecordType::A, true),
        &resolver,
        &ByAddress,
    )
    .await;
    assert_eq!(label, "answered");
    let reply = parse(&bytes);
    assert_eq!(addresses(&reply), vec!["203.0.113.9"]);
    assert_eq!(reply.answers()[0].name().to_ascii(), "Q1.Evil.Example.");
    assert_eq!(reply.queries()[0].name().to_ascii(), "Q1.Evil.Example.");
    // Other types carry nothing back: NOERROR, no records.
    for rtype in [
        RecordType::MX,
        RecordType::HINFO,
        RecordType::Unknown(65399),
    ] {
        let (bytes, _) = answer(
            &query("q2.evil.example.", rtype, true),
            &resolver,
            &ByAddress,
        )
        .await;
        let reply = parse(&bytes);
        assert_eq!(reply.response_code(), ResponseCode::NoError, "{rtype}");
        assert!(reply.answers().is_empty(), "{rtype}: {:?}", reply.answers());
    }
    // Unfiltered (a name rule allows it), the chain is as resolved.
    let (bytes, _) = answer(
        &query("q3.evil.example.", RecordType::A, true),
        &resolver,
        &Open,
    )
    .await;
    assert!(
        parse(&bytes)
            .answers()
            .iter()
            .any(|r| matches!(r.data(), RData::CNAME(_)))
    );
    // Upstream, names go in lower case: case bits would leave uncounted.
    let asked = asked.lock().expect("lock").clone();
    assert!(asked.contains(&"q1.evil.example.".to_owned()), "{asked:?}");
    assert!(
        asked.iter().all(|name| *name == name.to_ascii_lowercase()),
        "{asked:?}"
    );
}
