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
    rr::{DNSClass, RData, Record, RecordType},
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
    /// Decides a lookup Sluice makes itself for a connection's SNI or Host,
    /// as an A question held to the same name rules and caps, but not to
    /// the query rate (one connection is not one question).
    fn admit_lookup(&self, name: &str) -> Admission {
        self.admit(name, RecordType::A)
    }
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
    // Asked upstream in lower case: letter case would otherwise carry a bit
    // a letter past the guard, which counts names case-insensitively (the
    // reply echoes the question as asked).
    let name = question.name().to_ascii().to_ascii_lowercase();
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
        Ok(records) => {
            let records = if filtered {
                addresses_kept(question, records, gate)
            } else {
                owned_as_asked(question, records)
            };
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

/// A filtered answer (a name no name rule decides, under address rules):
/// only the A/AAAA records the gate keeps, each owned by the name asked
/// (a CNAME chain flattened away). Anything else would be read back from a
/// zone the sandbox's own queries reach: CNAME targets, MX, TXT-like and
/// private types are the return half of a DNS tunnel.
fn addresses_kept(question: &Query, records: Vec<Record>, gate: &dyn Gate) -> Vec<Record> {
    records
        .into_iter()
        .filter(|record| match record.data() {
            RData::A(a) => gate.keep(IpAddr::V4(a.0)),
            RData::AAAA(aaaa) => gate.keep(IpAddr::V6(aaaa.0)),
            _ => false,
        })
        .filter(|record| record.record_type() == question.query_type())
        .map(|record| Record::from_rdata(question.name().clone(), record.ttl(), record.into_data()))
        .collect()
}

/// An answer as resolved (the name asked in lower case), its records for
/// that name owned by the name as asked.
fn owned_as_asked(question: &Query, mut records: Vec<Record>) -> Vec<Record> {
    for record in &mut records {
        // `Name` compares case-insensitively.
        if record.name() == question.name() {
            record.set_name(question.name().clone());
        }
    }
    records
}

/// Encodes the reply, truncating it (TC set, no records) when it would not
/// fit the asker's UDP payload size (or `tcp_limit`, when not 0).
fn reply(
    request: &Message,
    question: &Query,
    code: ResponseCode,
    records: Vec<Record>,
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
mod tests;
