//! The learned scorer: a logistic regression over hashed word uni- and
//! bigrams ([`features`]), its weights compiled into the binary
//! (`weights.bin`, written by `scan/train/train.py`; SOURCES.md there says
//! what it learned from).
//!
//! The rules recognise the phrasings they were written from; the model
//! reads the words around them and generalises to phrasings no rule names.
//! It scores the texts the rules score, with no decoding of its own (the
//! rules' families cover hidden and encoded text), and the request's model
//! evidence is its highest-scoring text.
//!
//! Only texts where the rules' SIMD sweep found an anchor literal that is
//! not an everyday word (`gate`), or that a rule fired on, are read
//! (`scanner::Scanner::scan_for_model`), and of the former only the words
//! within [`features::RADIUS`] bytes of those anchors' hits
//! ([`Model::score_around`]): run on every text, the word loop
//! ([`features::words`]) cost both content stages three quarters of their
//! speed, and run on the whole of each anchored text still a sixth to a
//! third at 64 KiB and 1 MiB (README, Content scanning). Read around the
//! hits its cost is the hits', not the texts' length.
//!
//! Calibration: the trainer finds the logit `z80` that 99.5% of the texts
//! of every benign training source stay under, and the model's score is
//! `sigmoid(z - z80 + ln 4)`, so `z80` scores exactly 0.8, the shipped
//! threshold. How it combines with the rules is [`super::score`]'s.

pub mod features;
pub(crate) mod gate;

use std::sync::LazyLock;

/// The weights file: `SLIM`, then little-endian u32 version, bits and
/// block, f32 scale, bias and z80, then `2^bits` signed bytes.
static WEIGHTS: &[u8] = include_bytes!("weights.bin");

const MAGIC: &[u8; 4] = b"SLIM";
const VERSION: u32 = 1;
const HEADER: usize = 4 + 4 * 6;

/// The weights shipped in the binary, parsed on first use.
#[expect(
    clippy::expect_used,
    reason = "the file is compiled in; a unit test loads it"
)]
pub static MODEL: LazyLock<Model> =
    LazyLock::new(|| Model::parse(WEIGHTS).expect("the compiled-in injection model weights"));

/// A parsed weights file.
pub struct Model {
    bits: u32,
    block: usize,
    /// A weight is `scale` times its table byte.
    scale: f32,
    bias: f32,
    /// The logit that scores 0.8.
    z80: f32,
    table: Vec<i8>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ModelError {
    #[error("not an injection model weights file (want magic SLIM, version {VERSION})")]
    Header,
    #[error("weights table of {got} bytes where the header says {want}")]
    Size { got: usize, want: usize },
}

impl Model {
    pub fn parse(bytes: &[u8]) -> Result<Model, ModelError> {
        if bytes.len() < HEADER || &bytes[..4] != MAGIC {
            return Err(ModelError::Header);
        }
        let word = |i: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&bytes[4 + 4 * i..8 + 4 * i]);
            b
        };
        let (version, bits, block) = (
            u32::from_le_bytes(word(0)),
            u32::from_le_bytes(word(1)),
            u32::from_le_bytes(word(2)),
        );
        if version != VERSION || !(8..=24).contains(&bits) || block == 0 {
            return Err(ModelError::Header);
        }
        let want = 1usize << bits;
        let table = &bytes[HEADER..];
        if table.len() != want {
            return Err(ModelError::Size {
                got: table.len(),
                want,
            });
        }
        Ok(Model {
            bits,
            block: block as usize,
            scale: f32::from_le_bytes(word(3)),
            bias: f32::from_le_bytes(word(4)),
            z80: f32::from_le_bytes(word(5)),
            table: table.iter().map(|&b| b as i8).collect(),
        })
    }

    /// The logit of `text`'s strongest window; `None` when it has no word.
    /// A text of fewer words than a block is too short to judge by its
    /// words alone: its evidence is shrunk toward the prior in proportion,
    /// and the rules judge it (short benign requests that share an
    /// attack's nouns, "summarize the instructions for this shelf", scored
    /// over 0.8 without it).
    pub fn logit(&self, text: &str) -> Option<f64> {
        self.logit_of(text.as_bytes())
    }

    /// [`Model::logit`] of a text's bytes, which need not end on a
    /// character's boundary: a word is any run of non-ASCII bytes.
    fn logit_of(&self, text: &[u8]) -> Option<f64> {
        let (sum, words) = features::max_window(text, &self.table, self.bits, self.block)?;
        let share = (words as f64 / self.block as f64).min(1.0);
        Some(f64::from(self.bias) + f64::from(self.scale) * f64::from(sum) * share)
    }

    /// The logit of the strongest window within [`features::RADIUS`]
    /// bytes of the `hits` (`start`, `end` in `text`): what [`Model::logit`]
    /// reads there, and the same as it for a text no longer than the
    /// stretch around its hits. Its cost is the hits', not the text's.
    pub fn logit_around(&self, text: &str, hits: &[(usize, usize)]) -> Option<f64> {
        features::spans(text.as_bytes(), hits)
            .into_iter()
            .filter_map(|(s, e)| self.logit_of(&text.as_bytes()[s..e]))
            .max_by(f64::total_cmp)
    }

    /// The calibrated score of the strongest window around the `hits`
    /// ([`Model::logit_around`]): 0 when there is no word.
    pub fn score_around(&self, text: &str, hits: &[(usize, usize)]) -> f64 {
        self.logit_around(text, hits)
            .map_or(0.0, |z| self.calibrated(z))
    }

    /// The calibrated score of a logit: 0.8 at `z80`.
    pub fn calibrated(&self, logit: f64) -> f64 {
        let z = logit - f64::from(self.z80) + 4.0_f64.ln();
        1.0 / (1.0 + (-z).exp())
    }

    /// The calibrated score of `text`: 0 when it has no word.
    pub fn score(&self, text: &str) -> f64 {
        self.logit(text).map_or(0.0, |z| self.calibrated(z))
    }
}

#[cfg(test)]
mod tests;
