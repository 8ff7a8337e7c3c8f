//! A span's display name built from its fields, by a rule: templates
//! tried in order, the first whose fields a span has naming it
//! ([`NamingRule`]). By default, the conventions its users already have:
//! `otel.name`; else `http.route`, after the method when there is one;
//! else the method and the URI's path (tower-http's `request`). Names
//! built from values are capped per call site, so that ten thousand
//! `/users/ID` paths never fill the name table: past the cap, a call
//! site's new values share one name, `NAME (other)`.

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
/// Templates a rule holds at most.
pub const MAX_TEMPLATES: usize = 32;

/// The conventions' fields.
const OTEL_NAME: &str = "otel.name";
const ROUTE: &str = "http.route";
const METHODS: [&str; 3] = ["method", "http.method", "http.request.method"];
const PATHS: [&str; 3] = ["uri", "url.path", "http.target"];

/// How spans are named from their fields: templates, tried in order; the
/// first whose fields the span recorded names it.
///
/// A template is text with fields in braces: `{http.route}` is the
/// field's value, `{uri:path}` the path of a URI in it (no scheme,
/// authority, query or fragment); `{{` and `}}` are braces. Every
/// template names at least one field. A call site's spans are named by
/// the templates whose fields the call site has; one that has none of
/// them keeps its name.
///
/// ```
/// use typhon_live_tracing::{naming::NamingRule, TyphonLayer};
///
/// let rule = NamingRule::new(["{otel.name}", "{job} #{attempt}"]).unwrap();
/// let layer = TyphonLayer::named_by(rule);
/// # drop(layer);
/// assert_eq!(
///     NamingRule::new(["{job"]).unwrap_err().to_string(),
///     "naming template 1, at byte 0: `{` is not closed"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamingRule {
    templates: Vec<Template>,
    /// Every field the templates name, once.
    fields: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Template {
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Text(String),
    /// The value of the rule's field of this index; its path if `path`.
    Field {
        slot: usize,
        path: bool,
    },
}

/// Why a naming template was refused: which template (from 1), where in
/// it (a byte offset), and what.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NamingError {
    /// A `{` with no `}` after it.
    Unclosed {
        /// The template, from 1.
        template: usize,
        /// Byte offset of the `{`.
        at: usize,
    },
    /// A `}` that closes nothing (write `}}` for a brace).
    Unopened {
        /// The template, from 1.
        template: usize,
        /// Byte offset of the `}`.
        at: usize,
    },
    /// `{}` or `{:path}`: no field named.
    EmptyField {
        /// The template, from 1.
        template: usize,
        /// Byte offset of the `{`.
        at: usize,
    },
    /// A `:` after a field name with something other than `path`.
    UnknownFilter {
        /// The template, from 1.
        template: usize,
        /// Byte offset of the `:`.
        at: usize,
    },
    /// A template with no field: it would give every span one name.
    NoField {
        /// The template, from 1.
        template: usize,
    },
    /// More than [`MAX_TEMPLATES`] templates, or no template at all.
    Count {
        /// How many were given.
        given: usize,
    },
}

impl fmt::Display for NamingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            NamingError::Unclosed { template, at } => {
                write!(
                    f,
                    "naming template {template}, at byte {at}: `{{` is not closed"
                )
            }
            NamingError::Unopened { template, at } => write!(
                f,
                "naming template {template}, at byte {at}: `}}` closes nothing (a brace is `}}}}`)"
            ),
            NamingError::EmptyField { template, at } => {
                write!(
                    f,
                    "naming template {template}, at byte {at}: no field named"
                )
            }
            NamingError::UnknownFilter { template, at } => write!(
                f,
                "naming template {template}, at byte {at}: the only filter is `:path`"
            ),
            NamingError::NoField { template } => {
                write!(f, "naming template {template} names no field")
            }
            NamingError::Count { given } => write!(
                f,
                "a naming rule has 1 to {MAX_TEMPLATES} templates, not {given}"
            ),
        }
    }
}

impl std::error::Error for NamingError {}

impl Default for NamingRule {
    fn default() -> Self {
        NamingRule::conventions()
    }
}

impl NamingRule {
    /// A rule of `templates`, tried in order.
    pub fn new<'a>(
        templates: impl IntoIterator<Item = &'a str>,
    ) -> Result<NamingRule, NamingError> {
        let templates: Vec<&str> = templates.into_iter().collect();
        if templates.is_empty() || templates.len() > MAX_TEMPLATES {
            return Err(NamingError::Count {
                given: templates.len(),
            });
        }
        let mut rule = NamingRule {
            templates: Vec::new(),
            fields: Vec::new(),
        };
        for (i, text) in templates.iter().enumerate() {
            let template = rule.parse(i + 1, text)?;
            rule.templates.push(template);
        }
        Ok(rule)
    }

    /// The conventions: `{otel.name}`; the method (`method`,
    /// `http.method` or `http.request.method`) and `{http.route}`; the
    /// route alone; the method and the path of `uri`, `url.path` or
    /// `http.target`.
    pub fn conventions() -> NamingRule {
        let mut templates = vec![format!("{{{OTEL_NAME}}}")];
        templates.extend(METHODS.iter().map(|m| format!("{{{m}}} {{{ROUTE}}}")));
        templates.push(format!("{{{ROUTE}}}"));
        for m in METHODS {
            templates.extend(PATHS.iter().map(|p| format!("{{{m}}} {{{p}:path}}")));
        }
        NamingRule::new(templates.iter().map(String::as_str)).expect("the conventions parse")
    }

    fn parse(&mut self, template: usize, text: &str) -> Result<Template, NamingError> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text.char_indices().peekable();
        while let Some((at, c)) = rest.next() {
            match c {
                '{' if rest.peek().is_some_and(|&(_, n)| n == '{') => {
                    rest.next();
                    literal.push('{');
                }
                '}' if rest.peek().is_some_and(|&(_, n)| n == '}') => {
                    rest.next();
                    literal.push('}');
                }
                '}' => return Err(NamingError::Unopened { template, at }),
                '{' => {
                    let inner = &text[at + 1..];
                    let close = inner
                        .find('}')
                        .ok_or(NamingError::Unclosed { template, at })?;
                    let (name, path) = match inner[..close].split_once(':') {
                        Some((name, "path")) => (name, true),
                        Some((name, _)) => {
                            return Err(NamingError::UnknownFilter {
                                template,
                                at: at + 1 + name.len(),
                            })
                        }
                        None => (&inner[..close], false),
                    };
                    if name.is_empty() {
                        return Err(NamingError::EmptyField { template, at });
                    }
                    if !literal.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut literal)));
                    }
                    parts.push(Part::Field {
                        slot: self.slot(name),
                        path,
                    });
                    // Past the closing brace.
                    while rest.peek().is_some_and(|&(i, _)| i <= at + 1 + close) {
                        rest.next();
                    }
                }
                c => literal.push(c),
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        if !parts.iter().any(|p| matches!(p, Part::Field { .. })) {
            return Err(NamingError::NoField { template });
        }
        Ok(Template { parts })
    }

    /// The slot of field `name`, added if new.
    fn slot(&mut self, name: &str) -> usize {
        self.fields
            .iter()
            .position(|f| f == name)
            .unwrap_or_else(|| {
                self.fields.push(name.to_owned());
                self.fields.len() - 1
            })
    }
}

impl Template {
    fn slots(&self) -> impl Iterator<Item = usize> + '_ {
        self.parts.iter().filter_map(|p| match p {
            Part::Field { slot, .. } => Some(*slot),
            Part::Text(_) => None,
        })
    }

    /// The name `values` give, if they hold each of its fields.
    fn render(&self, values: &Values) -> Option<String> {
        let mut name = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => name.push_str(text),
                Part::Field { slot, path } => {
                    let value = values.0.get(*slot)?.as_deref()?;
                    name.push_str(if *path { path_of(value) } else { value });
                }
            }
        }
        Some(name)
    }
}

/// A call site whose spans are named from their fields.
pub(crate) struct Naming {
    rule: NamingRule,
    /// The templates whose fields the call site has, in order.
    usable: Vec<usize>,
    /// By the call site's field index, the rule's slot for it.
    slots: Vec<Option<usize>>,
    built: Capped,
}

impl Naming {
    /// The naming of `meta`'s spans by `rule`, if its fields can name them.
    pub(crate) fn of(meta: &'static Metadata<'static>, rule: &NamingRule) -> Option<Naming> {
        let has = |slot: usize| meta.fields().field(&rule.fields[slot]).is_some();
        let usable: Vec<usize> = (rule.templates.iter().enumerate())
            .filter(|(_, t)| t.slots().all(has))
            .map(|(i, _)| i)
            .collect();
        if usable.is_empty() {
            return None;
        }
        let slots = (meta.fields().iter())
            .map(|f| rule.fields.iter().position(|name| name == f.name()))
            .collect();
        Some(Naming {
            rule: rule.clone(),
            usable,
            slots,
            built: Capped::new(format!("{} (other)", meta.name())),
        })
    }

    /// The name id the values `record` visits build, interned the first
    /// time; `None` when they name nothing (the call site's name stands).
    pub(crate) fn name_from(&self, record: impl FnOnce(&mut dyn Visit)) -> Option<NameId> {
        let mut values = Values(vec![None; self.rule.fields.len()]);
        record(&mut NamingVisitor {
            naming: self,
            values: &mut values,
        });
        let name = (self.usable.iter()).find_map(|&t| self.rule.templates[t].render(&values))?;
        self.built.intern(&name)
    }
}

/// One span's values of the rule's fields, by slot, as recorded.
struct Values(Vec<Option<String>>);

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
struct NamingVisitor<'a> {
    naming: &'a Naming,
    values: &'a mut Values,
}

impl NamingVisitor<'_> {
    fn take(&mut self, field: &Field, value: &dyn fmt::Display) {
        let Some(&Some(slot)) = self.naming.slots.get(field.index()) else {
            return;
        };
        let mut text = value.to_string();
        cut(&mut text, MAX_NAME_VALUE_BYTES);
        if let Some(held) = self.values.0.get_mut(slot) {
            *held = Some(text);
        }
    }
}

impl Visit for NamingVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.take(field, &value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.take(field, &format_args!("{value:?}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The name `rule` gives a span with `pairs` recorded.
    fn named(rule: &NamingRule, pairs: &[(&str, &str)]) -> Option<String> {
        let mut values = Values(vec![None; rule.fields.len()]);
        for (key, value) in pairs {
            let slot = rule
                .fields
                .iter()
                .position(|f| f == key)
                .expect("a rule's field");
            values.0[slot] = Some((*value).to_owned());
        }
        rule.templates.iter().find_map(|t| t.render(&values))
    }

    #[test]
    fn names_follow_the_conventions_in_order() {
        let rule = NamingRule::conventions();
        let all = [
            ("otel.name", "checkout"),
            ("http.route", "/users/{id}"),
            ("method", "GET"),
            ("uri", "/users/7"),
        ];
        assert_eq!(named(&rule, &all).as_deref(), Some("checkout"));
        assert_eq!(named(&rule, &all[1..]).as_deref(), Some("GET /users/{id}"));
        assert_eq!(
            named(&rule, &[("http.route", "/users/{id}")]).as_deref(),
            Some("/users/{id}")
        );
        let tower = [
            ("method", "POST"),
            ("uri", "http://localhost:8080/a/b?x=1#f"),
        ];
        assert_eq!(named(&rule, &tower).as_deref(), Some("POST /a/b"));
        assert_eq!(named(&rule, &[("method", "GET")]), None);
        assert_eq!(path_of("https://host"), "/");
    }

    #[test]
    fn a_rule_of_the_users_names_by_its_templates() {
        let rule = NamingRule::new(["{job} #{attempt}", "{{{job}}}", "{url:path}"]).unwrap();
        assert_eq!(
            named(&rule, &[("job", "resize"), ("attempt", "3")]).as_deref(),
            Some("resize #3")
        );
        assert_eq!(
            named(&rule, &[("job", "resize")]).as_deref(),
            Some("{resize}")
        );
        assert_eq!(
            named(&rule, &[("url", "https://h/x?y")]).as_deref(),
            Some("/x")
        );
    }

    #[test]
    fn bad_templates_are_named_with_where_they_went_wrong() {
        let error = |templates: &[&str]| NamingRule::new(templates.iter().copied()).unwrap_err();
        assert_eq!(
            error(&["{a}", "x {job"]),
            NamingError::Unclosed { template: 2, at: 2 }
        );
        assert_eq!(error(&["a}"]), NamingError::Unopened { template: 1, at: 1 });
        assert_eq!(
            error(&["{}"]),
            NamingError::EmptyField { template: 1, at: 0 }
        );
        assert_eq!(
            error(&["{uri:host}"]),
            NamingError::UnknownFilter { template: 1, at: 4 }
        );
        assert_eq!(error(&["static"]), NamingError::NoField { template: 1 });
        assert_eq!(error(&[]), NamingError::Count { given: 0 });
        assert_eq!(
            error(&["{a}"; MAX_TEMPLATES + 1]),
            NamingError::Count {
                given: MAX_TEMPLATES + 1
            }
        );
        assert_eq!(
            error(&["{uri:host}"]).to_string(),
            "naming template 1, at byte 4: the only filter is `:path`"
        );
    }
}
