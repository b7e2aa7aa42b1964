//! Policy sections a writer may give as `true` or `false` (their `enabled`
//! alone, the rest at its defaults: the seeds' shorthand) or as a mapping
//! in full. The mapping goes to the section's own derived form, so its
//! errors (an unknown key, a wrong type) keep their place in the file.

use std::{fmt, marker::PhantomData};

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor, value::MapAccessDeserializer};

/// A section read either way: `Err(on)` for the shorthand, `Ok` for the
/// mapping read as `F`.
pub fn switch_or<'de, D, F>(deserializer: D) -> Result<Result<F, bool>, D::Error>
where
    D: Deserializer<'de>,
    F: Deserialize<'de>,
{
    struct Either<F>(PhantomData<F>);

    impl<'de, F: Deserialize<'de>> Visitor<'de> for Either<F> {
        type Value = Result<F, bool>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("`true`, `false` or a mapping")
        }

        fn visit_bool<E>(self, on: bool) -> Result<Self::Value, E> {
            Ok(Err(on))
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            F::deserialize(MapAccessDeserializer::new(map)).map(Ok)
        }
    }

    deserializer.deserialize_any(Either(PhantomData))
}
