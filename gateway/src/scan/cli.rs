//! `sluice scan`: runs a policy's detectors over a file, stdin, or a corpus
//! of JSON-lines records, and prints the findings and the injection score
//! (rules and learned scorer apart) as JSON; with `--jsonl`, per record,
//! only the fields the corpus scorer reads. Values are not printed unless
//! asked (`--show-values`): the output may end up in logs.

use std::io::{BufRead, Read, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::content;
use crate::policy::load::load_file;
use sluice_scan::injection::Detector;
use sluice_scan::{Finding, ScanConfig, Scanner, decode};

#[derive(Debug, clap::Args)]
pub struct ScanArgs {
    /// The policy whose `pii.types` choose the detectors (default: every
    /// supported type).
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// Content-Type of the input (default: JSON if it starts with `{`, `[`
    /// or `"`, else text). Ignored with --jsonl, whose records carry their own.
    #[arg(long)]
    pub content_type: Option<String>,
    /// Content-Encoding of the input: gzip, deflate, br, zstd.
    #[arg(long)]
    pub content_encoding: Option<String>,
    /// Read corpus records (`id`, `content_type`, `body`), one JSON object a
    /// line, and write one prediction line each.
    #[arg(long)]
    pub jsonl: bool,
    /// Include each finding's value in the output.
    #[arg(long)]
    pub show_values: bool,
    /// The input file; `-` or nothing reads stdin.
    pub input: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("{0}")]
    Policy(String),
    #[error(transparent)]
    Scan(#[from] sluice_scan::ScanError),
    #[error(transparent)]
    Decode(#[from] sluice_scan::DecodeError),
    #[error("cannot read {what}: {source}")]
    Read {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// What the gateway refuses as uninspectable: finding nothing in it
    /// would mislead.
    #[error("the detectors cannot read this input (the gateway refuses such bodies): {0}")]
    Unreadable(String),
    #[error("cannot write the output: {0}")]
    Write(#[source] std::io::Error),
    #[error("line {line}: not a corpus record (`id`, `body`, optional `content_type`): {source}")]
    Record {
        line: usize,
        #[source]
        source: serde_json::Error,
    },
}

/// The largest input read, decoded or not.
const INPUT_CAP: usize = 256 << 20;

pub fn run(args: &ScanArgs) -> Result<(), CliError> {
    let (config, detector) = match &args.policy {
        Some(path) => {
            // The app catalogue is the daemon's; scanning needs no apps.
            let policy = load_file(path, None).map_err(|diagnostics| {
                let all: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
                CliError::Policy(all.join("\n"))
            })?;
            (
                ScanConfig::from_types(&policy.pii.types)?,
                Detector::new(&policy.injection_defense),
            )
        }
        None => (ScanConfig::all(), Detector::default()),
    };
    let scanner = Scanner::new(&config)?;
    let what = match &args.input {
        Some(path) if path.as_os_str() != "-" => path.display().to_string(),
        _ => "stdin".to_string(),
    };
    let input: Box<dyn Read> = match &args.input {
        Some(path) if path.as_os_str() != "-" => {
            Box::new(std::fs::File::open(path).map_err(|source| CliError::Read {
                what: what.clone(),
                source,
            })?)
        }
        _ => Box::new(std::io::stdin().lock()),
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if args.jsonl {
        corpus(
            &scanner,
            &detector,
            std::io::BufReader::new(input),
            &mut out,
            args.show_values,
            &what,
        )?;
    } else {
        let mut body = Vec::new();
        input
            .take(INPUT_CAP as u64)
            .read_to_end(&mut body)
            .map_err(|source| CliError::Read { what, source })?;
        let decoded = decode(args.content_encoding.as_deref(), &body, INPUT_CAP)?;
        // The gateway refuses such a body; finding nothing in it would mislead.
        if let Some(why) =
            sluice_scan::charset::unreadable(args.content_type.as_deref(), &decoded.bytes)
        {
            return Err(CliError::Unreadable(why.to_string()));
        }
        // Read once for both, as the pipeline reads a body.
        let read = content::Read::new(args.content_type.as_deref(), &decoded.bytes, true);
        let findings = read.pii(&scanner);
        let shown = Human {
            findings: show(&findings, &decoded.bytes, args.show_values),
            injection: Injection::of(&read.injection(&detector)),
        };
        serde_json::to_writer_pretty(&mut out, &shown).map_err(|e| CliError::Write(e.into()))?;
        writeln!(out).map_err(CliError::Write)?;
    }
    out.flush().map_err(CliError::Write)
}

#[derive(Deserialize)]
struct Record {
    id: serde_json::Value,
    #[serde(default)]
    content_type: Option<String>,
    body: String,
}

#[derive(Serialize)]
struct Shown<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    start: usize,
    end: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<std::borrow::Cow<'a, str>>,
}

/// What `sluice scan` prints for one input: the PII findings and how the
/// injection detector scored it, rule families and learned scorer apart.
#[derive(Serialize)]
struct Human<'a> {
    findings: Vec<Shown<'a>>,
    injection: Injection,
}

#[derive(Serialize)]
struct Injection {
    score: f64,
    /// The rule families' score alone.
    rules: f64,
    /// The learned scorer's calibrated score of the strongest text.
    model: f64,
    signals: Vec<ShownSignal>,
}

#[derive(Serialize)]
struct ShownSignal {
    name: &'static str,
    weight: f64,
    source: &'static str,
    location: String,
}

impl Injection {
    fn of(a: &sluice_scan::injection::Assessment) -> Injection {
        Injection {
            score: a.score,
            rules: a.rules,
            model: a.model,
            signals: a
                .signals
                .iter()
                .map(|s| ShownSignal {
                    name: s.as_str(),
                    weight: s.weight,
                    source: s.source.as_str(),
                    location: s.location.clone(),
                })
                .collect(),
        }
    }
}

/// A `--jsonl` line: the shared corpus scorer reads exactly these fields.
#[derive(Serialize)]
struct Prediction<'a> {
    id: &'a serde_json::Value,
    findings: Vec<Shown<'a>>,
    injection_score: f64,
}

fn show<'a>(findings: &[Finding], body: &'a [u8], values: bool) -> Vec<Shown<'a>> {
    findings
        .iter()
        .map(|f| Shown {
            kind: f.kind.as_str(),
            start: f.start,
            end: f.end,
            value: values.then(|| String::from_utf8_lossy(&body[f.start..f.end])),
        })
        .collect()
}

fn corpus(
    scanner: &Scanner,
    detector: &Detector,
    input: impl BufRead,
    out: &mut impl Write,
    values: bool,
    what: &str,
) -> Result<(), CliError> {
    for (n, line) in input.lines().enumerate() {
        let line = line.map_err(|source| CliError::Read {
            what: what.to_string(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let record: Record = serde_json::from_str(&line).map_err(|source| CliError::Record {
            line: n + 1,
            source,
        })?;
        let body = record.body.as_bytes();
        let content_type = record.content_type.as_deref();
        // Read once for both, as the pipeline reads a body.
        let read = content::Read::new(content_type, body, true);
        let findings = read.pii(scanner);
        let prediction = Prediction {
            id: &record.id,
            findings: show(&findings, body, values),
            injection_score: read.injection(detector).score,
        };
        serde_json::to_writer(&mut *out, &prediction).map_err(|e| CliError::Write(e.into()))?;
        writeln!(out).map_err(CliError::Write)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corpus_lines_become_prediction_lines() {
        let scanner = Scanner::new(&ScanConfig::all()).expect("scanner");
        let input = concat!(
            r#"{"id": "a", "content_type": "application/json", "body": "{\"m\": \"mail x@example.com\"}"}"#,
            "\n\n",
            r#"{"id": "b", "body": "nothing here"}"#,
            "\n"
        );
        let mut out = Vec::new();
        corpus(
            &scanner,
            &Detector::default(),
            input.as_bytes(),
            &mut out,
            false,
            "test",
        )
        .expect("runs");
        let lines: Vec<serde_json::Value> = String::from_utf8(out)
            .expect("utf-8")
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        assert_eq!(
            lines,
            [
                serde_json::json!({"id": "a", "findings": [{"type": "email", "start": 12, "end": 25}], "injection_score": 0.0}),
                serde_json::json!({"id": "b", "findings": [], "injection_score": 0.0}),
            ]
        );
    }

    #[test]
    fn a_bad_record_names_its_line() {
        let scanner = Scanner::new(&ScanConfig::all()).expect("scanner");
        let err = corpus(
            &scanner,
            &Detector::default(),
            "{\"id\": 1, \"body\": \"x\"}\nnot json\n".as_bytes(),
            &mut Vec::new(),
            false,
            "t",
        )
        .expect_err("fails");
        assert!(err.to_string().starts_with("line 2:"), "{err}");
    }
}
