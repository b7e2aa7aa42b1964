//! The DNS listener: answers the sandboxes' UDP queries (steered here by the
//! eBPF `sendmsg` programs) from the daemon's [`Resolver`], so a sandbox sees
//! exactly the addresses the allowlist will check.
//!
//! [`answer`] turns one datagram into one reply and is tested directly;
//! [`serve`] only moves datagrams and counts results in
//! `sluice_dns_queries_total{result}`: `answered` (NOERROR, with or without
//! records), `nxdomain`, `servfail`, `notimp` (not a standard IN query),
//! `malformed` (FORMERR, or dropped when not even a header parses).

use std::{
    net::{IpAddr, SocketAddr},
    sync::Arc,
    time::Duration,
};

use hickory_proto::{
    op::{Edns, Message, MessageType, OpCode, Query, ResponseCode},
    rr::{DNSClass, RData, RecordType},
};
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::{TcpStream, UdpSocket},
    sync::Semaphore,
};

use crate::{
    metrics::Metrics,
    resolve::{ResolveError, Resolver},
};

/// Receive buffer: larger datagrams are cut short and then fail to parse.
const MAX_DATAGRAM: usize = 4096;
/// Answers without EDNS must fit the classic UDP limit (RFC 1035 §4.2.1).
const CLASSIC_UDP_PAYLOAD: usize = 512;
/// The EDNS payload size we advertise and the most we ever send.
const MAX_UDP_PAYLOAD: u16 = 4096;
/// Queries being answered at once. Past this the receive loop waits, and the
/// kernel's socket buffer absorbs (or drops) the excess, so a flood of slow
/// lookups cannot grow tasks without bound.
const MAX_IN_FLIGHT: usize = 1024;
const DNS_HEADER_LEN: usize = 12;

/// What a sandbox's policy says about its questions. The daemon implements
/// it per sandbox (policy, tunnelling caps, audit); [`answer`] only obeys.
pub trait Gate: Send + Sync + 'static {
    /// Decides a question before anything is resolved.
    fn admit(&self, name: &str, qtype: RecordType) -> Admission;
    /// For [`Admission::ResolveFiltered`]: may this answer address be given out?
    fn keep(&self, ip: IpAddr) -> bool;
}

/// A gate's decision about one question.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Resolve and answer.
    Resolve,
    /// Resolve, then answer only the A/AAAA records [`Gate::keep`] accepts.
    ResolveFiltered,
    /// Answer with this code and no records; `label` goes to the metrics.
    Refuse(ResponseCode, &'static str),
}

/// A gate that admits everything (tests, and nothing else).
#[cfg(any(test, feature = "testing"))]
pub struct Open;

#[cfg(any(test, feature = "testing"))]
impl Gate for Open {
    fn admit(&self, _: &str, _: RecordType) -> Admission {
        Admission::Resolve
    }
    fn keep(&self, _: IpAddr) -> bool {
        true
    }
}

/// Answers every datagram on `socket`, each in its own task, until the
/// socket fails.
pub async fn serve(
    socket: UdpSocket,
    resolver: Arc<Resolver>,
    metrics: Arc<Metrics>,
    gate: Arc<dyn Gate>,
) -> std::io::Result<()> {
    let socket = Arc::new(socket);
    let permits = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        let permit = permits
            .clone()
            .acquire_owned()
            .await
            .map_err(std::io::Error::other)?;
        let (len, peer) = match socket.recv_from(&mut buf).await {
            Ok(received) => received,
            // An ICMP error for an earlier reply, or a signal: not the
            // listener's fault.
            Err(err) if transient(&err) => continue,
            Err(err) => return Err(err),
        };
        let query = buf[..len].to_vec();
        let (socket, resolver, metrics) = (socket.clone(), resolver.clone(), metrics.clone());
        let gate = gate.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let (reply, label) = answer(&query, &resolver, &*gate).await;
            metrics.dns_queries.with_label_values(&[label]).inc();
            if !reply.is_empty() {
                send(&socket, &reply, peer).await;
            }
        });
    }
}

fn transient(err: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        err.kind(),
        ConnectionRefused | ConnectionReset | Interrupted | WouldBlock
    )
}

async fn send(socket: &UdpSocket, reply: &[u8], peer: SocketAddr) {
    if let Err(err) = socket.send_to(reply, peer).await {
        tracing::debug!(%peer, error = %err, "DNS reply not sent");
    }
}

/// Idle time allowed between DNS-over-TCP messages before the connection is
/// closed (RFC 7766 suggests seconds, not minutes).
const TCP_IDLE: Duration = Duration::from_secs(10);

/// DNS over TCP (a sandbox's connection to port 53, steered like any other):
/// length-prefixed messages answered one by one through the same gate.
pub async fn serve_tcp(
    mut stream: TcpStream,
    resolver: Arc<Resolver>,
    metrics: Arc<Metrics>,
    gate: Arc<dyn Gate>,
) {
    let mut query = Vec::new();
    loop {
        let Ok(Ok(len)) = tokio::time::timeout(TCP_IDLE, stream.read_u16()).await else {
            return;
        };
        query.resize(usize::from(len), 0);
        if !matches!(
            tokio::time::timeout(TCP_IDLE, stream.read_exact(&mut query)).await,
            Ok(Ok(_))
        ) {
            return;
        }
        let (mut reply, label) = answer_sized(&query, &resolver, &*gate, u16::MAX.into()).await;
        metrics.dns_queries.with_label_values(&[label]).inc();
        if reply.is_empty() {
            return;
        }
        let Ok(len) = u16::try_from(reply.len()) else {
            return;
        };
        reply.splice(0..0, len.to_be_bytes());
        if stream.write_all(&reply).await.is_err() {
            return;
        }
    }
}

/// Pure: build the response bytes for one query datagram (used by serve and
/// tested directly). Empty bytes mean "send nothing".
pub async fn answer(query: &[u8], resolver: &Resolver, gate: &dyn Gate) -> (Vec<u8>, &'static str) {
    answer_sized(query, resolver, gate, 0).await
}

/// `tcp_limit`: the largest reply the transport carries (0: UDP rules).
async fn answer_sized(
    query: &[u8],
    resolver: &Resolver,
    gate: &dyn Gate,
    tcp_limit: usize,
) -> (Vec<u8>, &'static str) {
    let Some(header) = RawHeader::parse(query) else {
        return (Vec::new(), "malformed");
    };
    // Never answer a response: two listeners could bounce errors forever.
    if header.is_response {
        return (Vec::new(), "malformed");
    }
    let request = match Message::from_vec(query) {
        Ok(request) => request,
        Err(_) => return (header.error(ResponseCode::FormErr), "malformed"),
    };
    if request.op_code() != OpCode::Query {
        return (header.error(ResponseCode::NotImp), "notimp");
    }
    let [question] = request.queries() else {
        return (header.error(ResponseCode::FormErr), "malformed");
    };
    if question.query_class() != DNSClass::IN {
        return (
            reply(
                &request,
                question,
                ResponseCode::NotImp,
                Vec::new(),
                tcp_limit,
            ),
            "notimp",
        );
    }
    let name = question.name().to_ascii();
    let filtered = match gate.admit(&name, question.query_type()) {
        Admission::Resolve => false,
        Admission::ResolveFiltered => true,
        Admission::Refuse(code, label) => {
            return (
                reply(&request, question, code, Vec::new(), tcp_limit),
                label,
            );
        }
    };
    let (code, records, label) = match resolver.lookup(&name, question.query_type()).await {
        Ok(mut records) => {
            if filtered {
                records.retain(|record| match record.data() {
                    RData::A(a) => gate.keep(IpAddr::V4(a.0)),
                    RData::AAAA(aaaa) => gate.keep(IpAddr::V6(aaaa.0)),
                    // Names and other types carry no address to reach.
                    _ => true,
                });
            }
            (ResponseCode::NoError, records, "answered")
        }
        Err(ResolveError::NotFound(_)) => (ResponseCode::NXDomain, Vec::new(), "nxdomain"),
        Err(err) => {
            tracing::debug!(error = %err, "DNS lookup failed");
            (ResponseCode::ServFail, Vec::new(), "servfail")
        }
    };
    (reply(&request, question, code, records, tcp_limit), label)
}

/// Encodes the reply, truncating it (TC set, no records) when it would not
/// fit the asker's UDP payload size (or `tcp_limit`, when not 0).
fn reply(
    request: &Message,
    question: &Query,
    code: ResponseCode,
    records: Vec<hickory_proto::rr::Record>,
    tcp_limit: usize,
) -> Vec<u8> {
    let mut response = Message::new();
    response
        .set_id(request.id())
        .set_message_type(MessageType::Response)
        .set_op_code(OpCode::Query)
        .set_recursion_desired(request.recursion_desired())
        .set_recursion_available(true)
        .set_checking_disabled(request.checking_disabled())
        .set_response_code(code)
        .add_query(question.clone())
        .add_answers(records);
    let limit = match request.extensions() {
        _ if tcp_limit != 0 => tcp_limit,
        Some(edns) => {
            let mut ours = Edns::new();
            ours.set_max_payload(MAX_UDP_PAYLOAD);
            response.set_edns(ours);
            usize::from(edns.max_payload().clamp(512, MAX_UDP_PAYLOAD))
        }
        None => CLASSIC_UDP_PAYLOAD,
    };
    match response.to_vec() {
        Ok(bytes) if bytes.len() <= limit => bytes,
        Ok(_) => response.truncate().to_vec().unwrap_or_else(|err| {
            tracing::debug!(error = %err, "truncated DNS reply not encodable");
            servfail(request)
        }),
        Err(err) => {
            tracing::debug!(error = %err, "DNS reply not encodable");
            servfail(request)
        }
    }
}

fn servfail(request: &Message) -> Vec<u8> {
    RawHeader {
        id: request.id(),
        op_code: u8::from(request.op_code()),
        recursion_desired: request.recursion_desired(),
        is_response: false,
    }
    .error(ResponseCode::ServFail)
}

/// The fixed 12-byte header, read by hand so a query whose body does not
/// parse can still get a FORMERR with its id.
struct RawHeader {
    id: u16,
    is_response: bool,
    op_code: u8,
    recursion_desired: bool,
}

impl RawHeader {
    fn parse(bytes: &[u8]) -> Option<RawHeader> {
        let header = bytes.get(..DNS_HEADER_LEN)?;
        Some(RawHeader {
            id: u16::from_be_bytes([header[0], header[1]]),
            is_response: header[2] & 0x80 != 0,
            op_code: (header[2] >> 3) & 0x0f,
            recursion_desired: header[2] & 0x01 != 0,
        })
    }

    /// A header-only error reply (no question: it may not have parsed).
    fn error(&self, code: ResponseCode) -> Vec<u8> {
        let flags_hi = 0x80 | (self.op_code << 3) | u8::from(self.recursion_desired);
        // RA set; every code used here fits the header's four bits.
        let flags_lo = 0x80 | code.low();
        let mut out = Vec::with_capacity(DNS_HEADER_LEN);
        out.extend_from_slice(&self.id.to_be_bytes());
        out.extend_from_slice(&[flags_hi, flags_lo]);
        out.extend_from_slice(&[0; 8]); // no sections
        out
    }
}

#[cfg(test)]
mod tests {
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
        let (bytes, label) =
            answer(&query("many.test.", RecordType::A, false), &resolver, &Open).await;
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
}
