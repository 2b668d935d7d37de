//! Every vendor hookgate writes to, one row each: a destination's `kind`
//! names one. Adding a vendor is its module and its row here
//! (CONTRIBUTING.md, "Add a CRM vendor").

use std::fmt;

use super::{Spec, Vendor, http::Http, hubspot::Hubspot, resend::Resend, salesforce::Salesforce};

/// The vendors, by name.
pub static VENDORS: &[&dyn Vendor] = &[&Http, &Salesforce, &Hubspot, &Resend];

/// The vendor named `name`.
pub fn vendor(name: &str) -> Option<VendorRef> {
    VENDORS
        .iter()
        .find(|v| v.spec().name == name)
        .map(|v| VendorRef(*v))
}

/// The names a destination's `kind` may take.
pub fn names() -> Vec<&'static str> {
    VENDORS.iter().map(|v| v.spec().name).collect()
}

/// One vendor of [`VENDORS`], as a destination's configuration holds it:
/// compared and shown by name.
#[derive(Clone, Copy)]
pub struct VendorRef(&'static dyn Vendor);

impl VendorRef {
    pub fn spec(self) -> &'static Spec {
        self.0.spec()
    }

    pub fn name(self) -> &'static str {
        self.spec().name
    }

    pub fn get(self) -> &'static dyn Vendor {
        self.0
    }
}

impl PartialEq for VendorRef {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for VendorRef {}

impl fmt::Debug for VendorRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        effect::Object,
        vendor::{KeyCarrier, Keying, ObjectSpec, Target},
    };

    /// How one strategy reads in docs/destinations.md.
    fn keying_text(k: &Keying) -> String {
        let key = match k.key {
            KeyCarrier::Header => "a header (`idempotency_header`)".to_owned(),
            KeyCarrier::UuidHeader => "`Idempotency-Key`, as a UUID".to_owned(),
            KeyCarrier::IdempotencyKey => "`Idempotency-Key`".to_owned(),
            KeyCarrier::ExternalId => "the External ID, in the path".to_owned(),
            KeyCarrier::Reference => {
                "the body's `action_key`, searched as `external_ref`".to_owned()
            }
            KeyCarrier::UniqueProperty(p) => format!("the unique property `{p}`"),
        };
        let kept = k.key_retention.map_or_else(
            || "not stated".to_owned(),
            |d| match d.as_secs() {
                s if s >= 2 * 86_400 => format!("{} days", s / 86_400),
                s => format!("{} hours", s / 3600),
            },
        );
        let lost = if k.strategy.keyed() {
            "asked again with the key"
        } else {
            "looked up; not found: uncertain"
        };
        format!(
            "`{}`: {key}, at most {} characters, kept {kept}; links {}; a lost answer: {lost}",
            k.strategy,
            k.key_max_len,
            if k.links { "yes" } else { "no" }
        )
    }

    /// A vendor's row for one object in docs/destinations.md, as its
    /// [`Spec`] declares it.
    fn doc_row(spec: &Spec, object: &ObjectSpec) -> String {
        let fields: Vec<_> = object
            .fields
            .iter()
            .map(|(f, name)| format!("{f} `{name}`"))
            .collect();
        let links: Vec<_> = object.links.iter().map(|l| l.as_str()).collect();
        let keyings: Vec<_> = spec.keyings.iter().map(keying_text).collect();
        format!(
            "| `{}` | `{}` as `{}` | {} | {} | {} | {} s | {} s | bearer token |",
            spec.name,
            object.object,
            object.name,
            fields.join(", "),
            if links.is_empty() {
                "none".to_owned()
            } else {
                links.join(", ")
            },
            keyings.join("<br>"),
            spec.search_lag.as_secs(),
            spec.throttle_pause.as_secs()
        )
    }

    /// Each vendor sends the key where its `Spec` says, under each strategy
    /// it allows, for each object it writes.
    #[test]
    fn every_vendor_sends_the_key_where_its_spec_says() {
        let ws = crate::WorkspaceId::parse("ws-1").unwrap();
        let key = crate::action::ActionKey::new(&ws, "create_task", "c-1").unwrap();
        for vendor in VENDORS {
            let spec = vendor.spec();
            for object in spec.objects {
                let mut templates: std::collections::BTreeMap<_, _> = object
                    .object
                    .required()
                    .iter()
                    .map(|f| (f.as_str().to_owned(), "x".to_owned()))
                    .collect();
                for need in object.needs {
                    templates.insert(need.as_str().to_owned(), "y".to_owned());
                }
                let links: Vec<_> = object
                    .needs_link
                    .iter()
                    .map(|to| crate::effect::LinkRule {
                        to: to.as_str().into(),
                        by: "Ext__c".into(),
                        value: "v".into(),
                    })
                    .collect();
                let at = crate::Timestamp::from_secs(0);
                let effect = crate::effect::Effect::render(
                    object.object,
                    &templates,
                    &links,
                    &serde_json::Value::Null,
                    at,
                )
                .unwrap();
                let request = crate::action::ActionRequest::of_effect(key.clone(), "d", effect);
                for keying in spec.keyings {
                    let call = vendor
                        .create(&Target::plain(keying.strategy), &request)
                        .unwrap();
                    let body = call.body.clone().unwrap_or_default().to_string();
                    let sent = match keying.key {
                        KeyCarrier::Header | KeyCarrier::IdempotencyKey => call
                            .headers
                            .contains(&("Idempotency-Key".to_owned(), key.as_str().to_owned())),
                        KeyCarrier::UuidHeader => call
                            .headers
                            .contains(&("Idempotency-Key".to_owned(), super::super::uuid_of(&key))),
                        KeyCarrier::ExternalId => {
                            call.path.last().map(String::as_str) == Some(key.as_str())
                        }
                        KeyCarrier::Reference => {
                            body.contains(&format!("\"action_key\":\"{key}\""))
                        }
                        KeyCarrier::UniqueProperty(p) => {
                            body.contains(&format!("\"{p}\":\"{key}\""))
                        }
                    };
                    assert!(
                        sent,
                        "{} {:?} {}: {call:?}",
                        spec.name, keying.strategy, object.name
                    );
                }
            }
        }
    }

    #[test]
    fn destinations_md_has_one_row_per_vendor_and_object_as_its_spec_declares() {
        let page = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/destinations.md"),
        )
        .unwrap();
        let mut expected = 0;
        for vendor in VENDORS {
            for object in vendor.spec().objects {
                let line = doc_row(vendor.spec(), object);
                assert!(
                    page.lines().any(|l| l == line),
                    "docs/destinations.md lacks:\n{line}"
                );
                expected += 1;
            }
        }
        let table = page.split("## The vendors").nth(1).unwrap();
        let table = table.split("\n## ").next().unwrap();
        let rows = table.lines().filter(|l| l.starts_with("| `")).count();
        assert_eq!(rows, expected, "one row per vendor and object, no more");
    }

    #[test]
    fn every_vendor_is_found_by_its_name_once_and_declares_a_default_strategy() {
        let names = names();
        for name in &names {
            assert_eq!(vendor(name).unwrap().name(), *name);
            assert_eq!(names.iter().filter(|n| *n == name).count(), 1, "{name}");
            let spec = vendor(name).unwrap().spec();
            assert!(!spec.keyings.is_empty(), "{name}");
            // Every object is written or refused with a reason, never silently.
            for object in Object::ALL {
                let said =
                    spec.object(*object).is_some() || spec.cannot.iter().any(|(o, _)| o == object);
                assert!(said, "{name} says nothing of {object}");
            }
        }
        assert!(vendor("no-such-crm").is_none());
    }
}
