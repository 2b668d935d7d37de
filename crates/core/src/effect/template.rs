//! Templates: text with `{{/json/pointer}}` placeholders into an event,
//! parsed once when the configuration loads and rendered for each event (a
//! rule's fields and links, an `http` destination's request).

use serde_json::{Map, Value};

/// Text with `{{/json/pointer}}` placeholders, checked when the
/// configuration loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    /// A JSON pointer; `raw` (written `{{{/pointer}}}`) is never escaped.
    Pointer {
        pointer: String,
        raw: bool,
    },
}

impl Template {
    /// Parses `text`: every `{{` opens a placeholder that a `}}` closes,
    /// holding a JSON pointer (it starts with `/`); `{{{` and `}}}` mark a
    /// raw one, never escaped (an email's HTML body escapes the others).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_owned()));
            }
            let raw = rest[open..].starts_with("{{{");
            let (opener, closer) = if raw { (3, "}}}") } else { (2, "}}") };
            let after = &rest[open + opener..];
            let close = after
                .find(closer)
                .ok_or_else(|| format!("template {text:?}: a {{{{ is not closed"))?;
            let pointer = after[..close].trim();
            if !pointer.starts_with('/') {
                return Err(format!(
                    "template {text:?}: placeholder {{{{{pointer}}}}} must be a JSON pointer \
                     (start with /)"
                ));
            }
            parts.push(Part::Pointer {
                pointer: pointer.to_owned(),
                raw,
            });
            rest = &after[close + closer.len()..];
        }
        if rest.contains("}}") {
            return Err(format!("template {text:?}: a }}}} opens nothing"));
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_owned()));
        }
        Ok(Self { parts })
    }

    /// A path template's segments: split at each `/` outside a
    /// placeholder (a placeholder's pointer holds its own).
    pub fn path_segments(path: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let (mut start, mut depth, bytes) = (0, 0usize, path.as_bytes());
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i..].starts_with(b"{{") {
                depth += 1;
                i += 2;
            } else if bytes[i..].starts_with(b"}}") && depth > 0 {
                depth -= 1;
                i += 2;
            } else {
                if bytes[i] == b'/' && depth == 0 {
                    out.push(&path[start..i]);
                    start = i + 1;
                }
                i += 1;
            }
        }
        out.push(&path[start..]);
        out
    }

    /// Whether the template takes nothing from the document (a literal).
    pub fn literal(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [] => Some(""),
            [Part::Text(text)] => Some(text),
            _ => None,
        }
    }

    /// The value for `doc`: one placeholder alone is the value it points at
    /// (its JSON type kept; `Null` when absent); otherwise text, each value
    /// written as a string is, a number or boolean as JSON, an absent or
    /// null one as nothing.
    pub fn render(&self, doc: &Value) -> Value {
        if let [Part::Pointer { pointer, .. }] = self.parts.as_slice() {
            return doc.pointer(pointer).cloned().unwrap_or(Value::Null);
        }
        self.text(doc, false)
    }

    /// The text for an HTML document: each value taken from `doc` escaped
    /// (`&`, `<`, `>`, `"`, `'`) unless its placeholder is raw; the
    /// template's own text is HTML as written.
    pub fn render_html(&self, doc: &Value) -> Value {
        self.text(doc, true)
    }

    fn text(&self, doc: &Value, html: bool) -> Value {
        let mut out = String::new();
        for part in &self.parts {
            let (pointer, raw) = match part {
                Part::Text(text) => {
                    out.push_str(text);
                    continue;
                }
                Part::Pointer { pointer, raw } => (pointer, *raw),
            };
            let value = match doc.pointer(pointer) {
                Some(Value::String(s)) => s.clone(),
                None | Some(Value::Null) => String::new(),
                Some(other) => other.to_string(),
            };
            if html && !raw {
                out.push_str(&escape_html(&value));
            } else {
                out.push_str(&value);
            }
        }
        Value::String(out)
    }

    /// `value`'s string leaves rendered as templates against `doc` (a
    /// request body written as a TOML table); a leaf that is not a valid
    /// template is the first error.
    pub fn render_tree(value: &Value, doc: &Value) -> Result<Value, String> {
        Ok(match value {
            Value::String(text) => Self::parse(text)?.render(doc),
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|v| Self::render_tree(v, doc))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| Ok((k.clone(), Self::render_tree(v, doc)?)))
                    .collect::<Result<Map<_, _>, String>>()?,
            ),
            other => other.clone(),
        })
    }
}

/// `text` safe inside HTML text and attribute values.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_template_renders_text_and_keeps_a_lone_values_type() {
        let doc = json!({"a": {"n": 2000, "s": "x"}, "z": null});
        let one = Template::parse("{{/a/n}}").unwrap();
        assert_eq!(one.render(&doc), json!(2000));
        assert_eq!(
            Template::parse("{{ /a/missing }}").unwrap().render(&doc),
            Value::Null
        );
        let mixed = Template::parse("Order {{/a/s}} of {{/a/n}}{{/z}}!").unwrap();
        assert_eq!(mixed.render(&doc), json!("Order x of 2000!"));
        assert_eq!(Template::parse("plain").unwrap().literal(), Some("plain"));
        assert!(mixed.literal().is_none());
        for bad in ["{{/a", "{{a}}", "x }}", "{{}}"] {
            assert!(Template::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            Template::path_segments("v2/orders/{{/key}}/x"),
            ["v2", "orders", "{{/key}}", "x"]
        );
        let html = json!({"name": "<b>Ada & co</b>", "n": 2});
        let body = Template::parse("<p>{{/name}} {{{/name}}} {{/n}}</p>").unwrap();
        assert_eq!(
            body.render_html(&html),
            json!("<p>&lt;b&gt;Ada &amp; co&lt;/b&gt; <b>Ada & co</b> 2</p>")
        );
        assert_eq!(
            Template::parse("{{{/name}}}").unwrap().render(&html),
            json!("<b>Ada & co</b>")
        );
        let tree = json!({"ref": "{{/a/s}}", "n": ["{{/a/n}}", 1]});
        assert_eq!(
            Template::render_tree(&tree, &doc).unwrap(),
            json!({"ref": "x", "n": [2000, 1]})
        );
    }
}
