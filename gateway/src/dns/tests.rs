use std::{collections::BTreeMap, net::IpAddr};

use hickory_proto::rr::{Name, RData, RecordType};

use super::*;
use crate::config::ResolverConfig;

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
    Resolver::static_only(&ResolverConfig {
        hosts,
        nameservers: Vec::new(),
        system: false,
    })
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
