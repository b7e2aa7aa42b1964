//! Who may open a published app: the scope its publisher chose
//! (`private`, `org`, `users:a,b`, `public`) against the sandbox's owner
//! and the viewer's verified token. Pure; the listener answers the verdict.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::token::Viewer;

/// Subjects one `users:` scope may list.
pub const MAX_USERS: usize = 64;

/// The sandbox's owner (`owner: {sub, org}` at registration).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnerId {
    pub sub: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub org: Option<String>,
}

impl OwnerId {
    /// `SUB` or `SUB@ORG` (`sluice sandbox add --owner`).
    pub fn parse(s: &str) -> Result<OwnerId, ScopeError> {
        let (sub, org) = match s.rsplit_once('@') {
            Some((sub, org)) => (sub, Some(org)),
            None => (s, None),
        };
        let owner = OwnerId {
            sub: subject(sub)?.to_owned(),
            org: org.map(subject).transpose()?.map(str::to_owned),
        };
        Ok(owner)
    }
}

/// A publication's sharing scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The sandbox's owner only.
    Private,
    /// Anyone whose token names the owner's org.
    Org,
    /// The owner and the subjects listed.
    Users(Vec<String>),
    /// Anyone, with or without a token.
    Public,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    #[error("unknown scope `{0}`: use private, org, users:SUB[,SUB...] or public")]
    Unknown(String),
    #[error("`users:` lists no subject")]
    NoUsers,
    #[error("`users:` lists more than {MAX_USERS} subjects")]
    TooManyUsers,
    #[error("`{0}` is not a subject: 1 to 256 printable characters, no spaces, commas or `@`")]
    BadSubject(String),
}

fn subject(s: &str) -> Result<&str, ScopeError> {
    let ok = !s.is_empty()
        && s.len() <= 256
        && s.chars()
            .all(|c| c.is_ascii_graphic() && c != ',' && c != '@');
    if ok {
        Ok(s)
    } else {
        Err(ScopeError::BadSubject(s.to_owned()))
    }
}

impl std::str::FromStr for Scope {
    type Err = ScopeError;

    fn from_str(s: &str) -> Result<Scope, ScopeError> {
        match s {
            "private" => Ok(Scope::Private),
            "org" => Ok(Scope::Org),
            "public" => Ok(Scope::Public),
            _ => {
                let Some(list) = s.strip_prefix("users:") else {
                    return Err(ScopeError::Unknown(s.to_owned()));
                };
                let users: Vec<String> = list
                    .split(',')
                    .filter(|u| !u.is_empty())
                    .map(|u| subject(u).map(str::to_owned))
                    .collect::<Result<_, _>>()?;
                if users.is_empty() {
                    return Err(ScopeError::NoUsers);
                }
                if users.len() > MAX_USERS {
                    return Err(ScopeError::TooManyUsers);
                }
                Ok(Scope::Users(users))
            }
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Private => f.write_str("private"),
            Scope::Org => f.write_str("org"),
            Scope::Public => f.write_str("public"),
            Scope::Users(users) => write!(f, "users:{}", users.join(",")),
        }
    }
}

impl Serialize for Scope {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Scope, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// What the scope says of one viewer.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Admit,
    /// 401: who the viewer is must be shown first.
    Unauthenticated(&'static str),
    /// 403: the viewer is known and not among those the scope admits.
    Forbidden(&'static str),
}

/// Whether `viewer` (None: no token shown) may open an app of a sandbox
/// owned by `owner` published under `scope`. The owner is admitted under
/// every scope; a sandbox without an owner admits only whom its scope
/// names without one (`users:`, `public`).
pub fn decide(scope: &Scope, owner: Option<&OwnerId>, viewer: Option<&Viewer>) -> Access {
    if *scope == Scope::Public {
        return Access::Admit;
    }
    let Some(viewer) = viewer else {
        return Access::Unauthenticated("no_token");
    };
    if owner.is_some_and(|o| o.sub == viewer.sub) {
        return Access::Admit;
    }
    match scope {
        Scope::Public => Access::Admit,
        Scope::Private if owner.is_none() => Access::Forbidden("no_owner"),
        Scope::Private => Access::Forbidden("not_owner"),
        Scope::Org => match (owner.and_then(|o| o.org.as_ref()), &viewer.org) {
            (None, _) => Access::Forbidden("owner_has_no_org"),
            (Some(mine), Some(theirs)) if mine == theirs => Access::Admit,
            _ => Access::Forbidden("other_org"),
        },
        Scope::Users(users) if users.contains(&viewer.sub) => Access::Admit,
        Scope::Users(_) => Access::Forbidden("not_listed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn viewer(sub: &str, org: Option<&str>) -> Viewer {
        Viewer {
            sub: sub.into(),
            org: org.map(Into::into),
            exp: 0,
        }
    }

    #[test]
    fn scopes_admit_whom_they_name() {
        let owner = OwnerId::parse("ann@acme").expect("owner");
        let lone = OwnerId::parse("ann").expect("owner");
        let ann = viewer("ann", Some("acme"));
        let colleague = viewer("cat", Some("acme"));
        let outsider = viewer("eve", Some("evil"));
        let orgless = viewer("dan", None);
        let users: Scope = "users:dan,eve".parse().expect("users");
        use Access::*;
        type Row<'a> = (
            &'a str,
            Scope,
            Option<&'a OwnerId>,
            Option<&'a Viewer>,
            Access,
        );
        let table: Vec<Row> = vec![
            (
                "private owner",
                Scope::Private,
                Some(&owner),
                Some(&ann),
                Admit,
            ),
            (
                "private colleague",
                Scope::Private,
                Some(&owner),
                Some(&colleague),
                Forbidden("not_owner"),
            ),
            (
                "private anonymous",
                Scope::Private,
                Some(&owner),
                None,
                Unauthenticated("no_token"),
            ),
            (
                "private ownerless",
                Scope::Private,
                None,
                Some(&ann),
                Forbidden("no_owner"),
            ),
            ("org owner", Scope::Org, Some(&owner), Some(&ann), Admit),
            (
                "org colleague",
                Scope::Org,
                Some(&owner),
                Some(&colleague),
                Admit,
            ),
            (
                "org outsider",
                Scope::Org,
                Some(&owner),
                Some(&outsider),
                Forbidden("other_org"),
            ),
            (
                "org viewer without org",
                Scope::Org,
                Some(&owner),
                Some(&orgless),
                Forbidden("other_org"),
            ),
            (
                "org owner without org",
                Scope::Org,
                Some(&lone),
                Some(&colleague),
                Forbidden("owner_has_no_org"),
            ),
            (
                "org owner without org, owner",
                Scope::Org,
                Some(&lone),
                Some(&ann),
                Admit,
            ),
            (
                "org anonymous",
                Scope::Org,
                Some(&owner),
                None,
                Unauthenticated("no_token"),
            ),
            (
                "users listed",
                users.clone(),
                Some(&owner),
                Some(&orgless),
                Admit,
            ),
            (
                "users listed other org",
                users.clone(),
                Some(&owner),
                Some(&outsider),
                Admit,
            ),
            (
                "users colleague unlisted",
                users.clone(),
                Some(&owner),
                Some(&colleague),
                Forbidden("not_listed"),
            ),
            (
                "users owner",
                users.clone(),
                Some(&owner),
                Some(&ann),
                Admit,
            ),
            (
                "users ownerless",
                users.clone(),
                None,
                Some(&orgless),
                Admit,
            ),
            (
                "users anonymous",
                users,
                Some(&owner),
                None,
                Unauthenticated("no_token"),
            ),
            ("public anonymous", Scope::Public, Some(&owner), None, Admit),
            (
                "public outsider",
                Scope::Public,
                None,
                Some(&outsider),
                Admit,
            ),
        ];
        for (name, scope, owner, viewer, want) in table {
            assert_eq!(decide(&scope, owner, viewer), want, "{name}");
        }
    }

    #[test]
    fn scopes_parse_and_print_back() {
        for s in ["private", "org", "public", "users:ann", "users:ann,bob|x"] {
            let scope: Scope = s.parse().expect(s);
            assert_eq!(scope.to_string(), s);
        }
        assert_eq!(
            "users:a,,b,".parse::<Scope>(),
            Ok(Scope::Users(vec!["a".into(), "b".into()]))
        );
        let bad: Vec<(&str, ScopeError)> = vec![
            ("everyone", ScopeError::Unknown("everyone".into())),
            ("Private", ScopeError::Unknown("Private".into())),
            ("users:", ScopeError::NoUsers),
            ("users:,", ScopeError::NoUsers),
            ("users:a b", ScopeError::BadSubject("a b".into())),
            ("users:a@b", ScopeError::BadSubject("a@b".into())),
        ];
        for (s, want) in bad {
            assert_eq!(s.parse::<Scope>(), Err(want), "{s}");
        }
        let many = format!(
            "users:{}",
            (0..=MAX_USERS)
                .map(|i| format!("u{i}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert_eq!(many.parse::<Scope>(), Err(ScopeError::TooManyUsers));
    }

    #[test]
    fn owners_parse_with_or_without_an_org() {
        assert_eq!(
            OwnerId::parse("ann@acme"),
            Ok(OwnerId {
                sub: "ann".into(),
                org: Some("acme".into())
            })
        );
        assert_eq!(
            OwnerId::parse("ann"),
            Ok(OwnerId {
                sub: "ann".into(),
                org: None
            })
        );
        assert!(OwnerId::parse("@acme").is_err());
        assert!(OwnerId::parse("ann@").is_err());
        assert!(OwnerId::parse("").is_err());
    }
}
