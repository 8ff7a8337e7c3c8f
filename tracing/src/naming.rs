//! A span's display name built from its fields, by the conventions its
//! users already have: `otel.name`; else `http.route`, after the method
//! when there is one; else the method and the URI's path (tower-http's
//! `request`). Names built from values are capped per call site, so that
//! ten thousand `/users/ID` paths never fill the name table: past the
//! cap, a call site's new values share one name, `NAME (other)`.

use std::fmt;

use tracing_core::field::{Field, Visit};
use tracing_core::Metadata;

use crate::capped::{cut, Capped, MAX_PER_SITE};
use crate::site::NameId;

/// Distinct names one call site's fields may build.
pub const MAX_BUILT_NAMES: usize = MAX_PER_SITE;
/// Bytes of a field value a name takes at most (cut on a character
/// boundary).
pub const MAX_NAME_VALUE_BYTES: usize = 128;

/// The fields a name is built from.
const OTEL_NAME: &str = "otel.name";
const ROUTE: &str = "http.route";
const METHODS: [&str; 3] = ["method", "http.method", "http.request.method"];
const PATHS: [&str; 3] = ["uri", "url.path", "http.target"];

/// A call site whose spans are named from their fields.
pub(crate) struct Naming {
    built: Capped,
}

impl Naming {
    /// The naming of `meta`'s spans, if its fields can name them.
    pub(crate) fn of(meta: &'static Metadata<'static>) -> Option<Naming> {
        let has = |names: &[&str]| names.iter().any(|n| meta.fields().field(n).is_some());
        let named = has(&[OTEL_NAME, ROUTE]) || (has(&METHODS) && has(&PATHS));
        named.then(|| Naming {
            built: Capped::new(format!("{} (other)", meta.name())),
        })
    }

    /// The name id for `values`, interned the first time; `None` when
    /// the values name nothing (the call site's name stands).
    pub(crate) fn name(&self, values: &Values) -> Option<NameId> {
        self.built.intern(&values.text()?)
    }
}

/// The naming fields of one span, as recorded.
#[derive(Default)]
pub(crate) struct Values {
    otel_name: Option<String>,
    route: Option<String>,
    method: Option<String>,
    path: Option<String>,
}

impl Values {
    /// Keeps `value` if `field` is one a name is built from.
    pub(crate) fn take(&mut self, field: &Field, value: &dyn fmt::Display) {
        let slot = match field.name() {
            OTEL_NAME => &mut self.otel_name,
            ROUTE => &mut self.route,
            name if METHODS.contains(&name) => &mut self.method,
            name if PATHS.contains(&name) => &mut self.path,
            _ => return,
        };
        let mut text = value.to_string();
        cut(&mut text, MAX_NAME_VALUE_BYTES);
        *slot = Some(text);
    }

    /// Whether any was recorded.
    pub(crate) fn any(&self) -> bool {
        self.otel_name.is_some() || self.route.is_some() || self.path.is_some()
    }

    fn text(&self) -> Option<String> {
        if let Some(name) = &self.otel_name {
            return Some(name.clone());
        }
        let target = match (&self.route, &self.path) {
            (Some(route), _) => route.as_str(),
            (None, Some(uri)) => path_of(uri),
            (None, None) => return None,
        };
        Some(match &self.method {
            Some(method) => format!("{method} {target}"),
            None => target.to_owned(),
        })
    }
}

/// The path of a URI as `http::Uri` displays it: without its scheme and
/// authority, its query or its fragment.
fn path_of(uri: &str) -> &str {
    let rest = match uri.find("://") {
        Some(at) => {
            let after = &uri[at + 3..];
            after.find('/').map_or("/", |slash| &after[slash..])
        }
        None => uri,
    };
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    &rest[..end]
}

/// Collects a span's naming fields.
pub(crate) struct NamingVisitor<'a>(pub(crate) &'a mut Values);

impl Visit for NamingVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.take(field, &value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.take(field, &format_args!("{value:?}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(pairs: &[(&str, &str)]) -> Values {
        let mut v = Values::default();
        for (k, val) in pairs {
            let slot = match *k {
                "otel" => &mut v.otel_name,
                "route" => &mut v.route,
                "method" => &mut v.method,
                _ => &mut v.path,
            };
            *slot = Some((*val).to_owned());
        }
        v
    }

    #[test]
    fn names_follow_the_conventions_in_order() {
        let all = values(&[
            ("otel", "checkout"),
            ("route", "/users/{id}"),
            ("method", "GET"),
            ("uri", "/users/7"),
        ]);
        assert_eq!(all.text().as_deref(), Some("checkout"));
        let routed = values(&[
            ("route", "/users/{id}"),
            ("method", "GET"),
            ("uri", "/users/7"),
        ]);
        assert_eq!(routed.text().as_deref(), Some("GET /users/{id}"));
        let tower = values(&[
            ("method", "POST"),
            ("uri", "http://localhost:8080/a/b?x=1#f"),
        ]);
        assert_eq!(tower.text().as_deref(), Some("POST /a/b"));
        let bare = values(&[("uri", "/health?full")]);
        assert_eq!(bare.text().as_deref(), Some("/health"));
        assert_eq!(values(&[("method", "GET")]).text(), None);
        assert_eq!(path_of("https://host"), "/");
    }
}
