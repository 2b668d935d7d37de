//! Every vendor hookgate writes to, one row each: a destination's `kind`
//! names one. Adding a vendor is its module and its row here
//! (CONTRIBUTING.md, "Add a CRM vendor").

use std::fmt;

use super::{Spec, Vendor, http::Http, hubspot::Hubspot, salesforce::Salesforce};

/// The vendors, by name.
pub static VENDORS: &[&dyn Vendor] = &[&Http, &Salesforce, &Hubspot];

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
    use crate::vendor::KeyCarrier;

    /// A vendor's row in docs/destinations.md, as its [`Spec`] declares it.
    fn doc_row(spec: &Spec) -> String {
        let strategies: Vec<_> = spec.strategies.iter().map(|s| format!("`{s}`")).collect();
        let key = match spec.key {
            KeyCarrier::Header => "a header (`idempotency_header`)".to_owned(),
            KeyCarrier::ExternalId => "the External ID, in the path".to_owned(),
            KeyCarrier::UniqueProperty(p) => format!("the unique property `{p}`"),
        };
        let kept = spec
            .key_retention
            .map_or_else(|| "not stated".to_owned(), |d| format!("{} s", d.as_secs()));
        format!(
            "| `{}` | {} | {key}, at most {} characters | {kept} | {} s | {} s | bearer token |",
            spec.name,
            strategies.join(", "),
            spec.key_max_len,
            spec.search_lag.as_secs(),
            spec.throttle_pause.as_secs()
        )
    }

    /// Each vendor sends the key where its `Spec` says, under each strategy
    /// it allows that sends one.
    #[test]
    fn every_vendor_sends_the_key_where_its_spec_says() {
        let ws = crate::WorkspaceId::parse("ws-1").unwrap();
        let key = crate::action::ActionKey::new(&ws, "create_task", "c-1").unwrap();
        let request = crate::action::ActionRequest::new(key.clone(), "d", serde_json::json!({}));
        for vendor in VENDORS {
            let spec = vendor.spec();
            for strategy in spec.strategies {
                let target = super::super::Target {
                    strategy: *strategy,
                    idempotency_header: "Idempotency-Key",
                };
                let call = vendor.create(&target, &request);
                let body = call.body.clone().unwrap_or_default().to_string();
                let sent = match spec.key {
                    KeyCarrier::Header => {
                        *strategy != crate::destination::Strategy::IdempotencyKey
                            || call
                                .headers
                                .contains(&("Idempotency-Key".to_owned(), key.as_str().to_owned()))
                    }
                    KeyCarrier::ExternalId => {
                        call.path.last().map(String::as_str) == Some(key.as_str())
                    }
                    KeyCarrier::UniqueProperty(p) => body.contains(&format!("\"{p}\":\"{key}\"")),
                };
                assert!(sent, "{} {strategy:?}: {call:?}", spec.name);
            }
        }
    }

    #[test]
    fn destinations_md_has_one_row_per_vendor_as_its_spec_declares() {
        let page = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/destinations.md"),
        )
        .unwrap();
        for vendor in VENDORS {
            let line = doc_row(vendor.spec());
            assert!(
                page.lines().any(|l| l == line),
                "docs/destinations.md lacks:\n{line}"
            );
        }
        let table = page.split("## The vendors").nth(1).unwrap();
        let table = table.split("\n## ").next().unwrap();
        let rows = table.lines().filter(|l| l.starts_with("| `")).count();
        assert_eq!(rows, VENDORS.len(), "one row per vendor, no more");
    }

    #[test]
    fn every_vendor_is_found_by_its_name_once_and_declares_a_default_strategy() {
        let names = names();
        for name in &names {
            assert_eq!(vendor(name).unwrap().name(), *name);
            assert_eq!(names.iter().filter(|n| *n == name).count(), 1, "{name}");
            assert!(
                !vendor(name).unwrap().spec().strategies.is_empty(),
                "{name}"
            );
        }
        assert!(vendor("no-such-crm").is_none());
    }
}
