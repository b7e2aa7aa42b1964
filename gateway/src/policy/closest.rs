//! "Did you mean": the name closest to a misspelt one, for the hints of
//! policy and config errors.

/// The candidate closest to `word` by edit distance, if within 2 edits:
/// close enough to be a typo, far enough to avoid silly suggestions.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    // Bounds the quadratic distance computation on hostile input.
    const LONGEST: usize = 64;
    if word.chars().count() > LONGEST {
        return None;
    }
    candidates
        .into_iter()
        .filter(|c| *c != word && c.chars().count() <= LONGEST)
        .map(|c| (edit_distance(word, c), c))
        .filter(|&(d, _)| d <= 2)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_names() {
        let names = ["network", "pii", "injection_defense", "audit"];
        let cases = [
            ("netwrok", Some("network")),
            ("networks", Some("network")),
            ("pi", Some("pii")),
            ("injection-defence", Some("injection_defense")),
            ("network", None),
            ("zzzzzz", None),
            ("", None),
        ];
        for (word, want) in cases {
            assert_eq!(closest(word, names), want, "{word}");
        }
        assert_eq!(closest(&"n".repeat(10_000), names), None);
    }
}
