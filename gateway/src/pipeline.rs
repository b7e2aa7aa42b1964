//! The request pipeline: one ordered list of stages, each a small type with
//! one method that looks at an intercepted request and returns a verdict.
//!
//! Deciding is pure: a stage sees the request head and the sandbox's policy
//! and says `Continue`, `Deny` or `Respond`; the interceptor does the I/O.
//! The order is the one in DESIGN.md (apps, dry run, credential binding, PII,
//! prompt injection, transformations, credential injection last, so no
//! earlier stage ever sees a real secret). The stages themselves land with
//! their features; until then the pipeline is empty and every request
//! continues.

use hyper::{HeaderMap, Method, StatusCode, Uri};

use crate::policy::compiled::CompiledPolicy;

/// What a stage sees of one request.
pub struct RequestHead<'a> {
    pub sandbox: &'a str,
    pub session: Option<&'a str>,
    pub policy: &'a CompiledPolicy,
    /// The name the connection was decided on.
    pub host: &'a str,
    pub method: &'a Method,
    pub uri: &'a Uri,
    /// Stages may rewrite headers (credential injection does).
    pub headers: &'a mut HeaderMap,
}

/// A stage's decision.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Continue,
    /// Refuse with `status` and a JSON body naming `reason` and `rule`.
    Deny {
        status: StatusCode,
        reason: &'static str,
        rule: String,
    },
    /// Answer without forwarding (a dry run's preview).
    Respond {
        status: StatusCode,
        body: String,
    },
}

pub trait Stage: Send + Sync {
    fn name(&self) -> &'static str;
    fn on_request(&self, head: &mut RequestHead<'_>) -> Verdict;
}

/// The stages, in order; the first verdict other than `Continue` wins.
#[derive(Default)]
pub struct Pipeline {
    stages: Vec<Box<dyn Stage>>,
}

impl Pipeline {
    pub fn new(stages: Vec<Box<dyn Stage>>) -> Pipeline {
        Pipeline { stages }
    }

    /// Runs the stages; returns the deciding stage's name with its verdict.
    pub fn run(&self, head: &mut RequestHead<'_>) -> (Option<&'static str>, Verdict) {
        for stage in &self.stages {
            match stage.on_request(head) {
                Verdict::Continue => {}
                verdict => return (Some(stage.name()), verdict),
            }
        }
        (None, Verdict::Continue)
    }

    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::raw;

    struct Fixed(&'static str, Verdict);

    impl Stage for Fixed {
        fn name(&self) -> &'static str {
            self.0
        }
        fn on_request(&self, head: &mut RequestHead<'_>) -> Verdict {
            head.headers
                .append("x-seen-by", self.0.parse().expect("header value"));
            self.1.clone()
        }
    }

    fn deny(reason: &'static str) -> Verdict {
        Verdict::Deny {
            status: StatusCode::FORBIDDEN,
            reason,
            rule: "p:test".to_owned(),
        }
    }

    #[test]
    fn first_decisive_stage_wins_and_later_stages_do_not_run() {
        let policy = CompiledPolicy::compile("p", &raw::Policy::default()).expect("empty policy");
        // (stages, deciding stage, verdict, stages that ran)
        type Case = (Vec<Box<dyn Stage>>, Option<&'static str>, Verdict, usize);
        let cases: Vec<Case> = vec![
            (vec![], None, Verdict::Continue, 0),
            (
                vec![
                    Box::new(Fixed("a", Verdict::Continue)),
                    Box::new(Fixed("b", Verdict::Continue)),
                ],
                None,
                Verdict::Continue,
                2,
            ),
            (
                vec![
                    Box::new(Fixed("a", Verdict::Continue)),
                    Box::new(Fixed("b", deny("no"))),
                    Box::new(Fixed("c", deny("later"))),
                ],
                Some("b"),
                deny("no"),
                2,
            ),
        ];
        for (stages, stage, verdict, seen) in cases {
            let pipeline = Pipeline::new(stages);
            let mut headers = HeaderMap::new();
            let (method, uri) = (Method::GET, Uri::from_static("/"));
            let mut head = RequestHead {
                sandbox: "sb",
                session: None,
                policy: &policy,
                host: "a.test",
                method: &method,
                uri: &uri,
                headers: &mut headers,
            };
            assert_eq!(pipeline.run(&mut head), (stage, verdict));
            assert_eq!(headers.get_all("x-seen-by").iter().count(), seen);
        }
    }
}
