//! What `check-config` asks of a rule's effect for its destination's
//! vendor: the links it can find, the object it can write, with the fields
//! and links it takes and needs, under the destination's strategy.

use super::{Field, LinkBy, LinkTo, Object, ObjectSpec, Spec, Strategy};

impl Spec {
    /// Whether a rule that makes `object` with `fields` and `links` can be
    /// written under `strategy`, as `check-config` asks: a refusal names
    /// what cannot be, and why. A rule without an object writes a task.
    pub fn check(
        &self,
        strategy: Strategy,
        object: Option<Object>,
        fields: &[Field],
        links: &[(LinkTo, &str)],
    ) -> Result<(), String> {
        self.check_links(links)?;
        let links: Vec<LinkTo> = links.iter().map(|(to, _)| *to).collect();
        let Some(object) = object else {
            return Ok(());
        };
        let spec = self.check_object(object)?;
        self.check_effect(strategy, spec, fields, &links)
    }

    /// Each link names a way this vendor finds its record, once per kind.
    fn check_links(&self, links: &[(LinkTo, &str)]) -> Result<(), String> {
        let vendor = self.name;
        for (i, (to, by)) in links.iter().enumerate() {
            let bad_by = match self.link_by {
                LinkBy::RecordId => !by.eq_ignore_ascii_case("id"),
                LinkBy::Field => by.is_empty() || *by == "attributes",
            };
            if bad_by {
                return Err(format!(
                    "{vendor} cannot find a {to} by {by:?}: {}",
                    match self.link_by {
                        LinkBy::RecordId => "it links by the record's own id (by = \"id\")",
                        LinkBy::Field => "name a field that identifies the record, or Id",
                    }
                ));
            }
            if links[..i].iter().any(|(other, _)| other == to) {
                return Err(format!("two links to a {to}: a write sets one"));
            }
        }
        Ok(())
    }

    /// How this vendor writes `object`, or why it cannot.
    fn check_object(&self, object: Object) -> Result<&ObjectSpec, String> {
        let vendor = self.name;
        self.object(object).ok_or_else(|| {
            if let Some((_, why)) = self.cannot.iter().find(|(o, _)| *o == object) {
                return format!("{vendor} cannot write a {object}: {why}");
            }
            let writes: Vec<_> = self.objects.iter().map(|o| o.object.as_str()).collect();
            format!("{vendor} cannot write a {object}; it writes {writes:?}")
        })
    }

    /// The fields and links of an effect on `spec`'s object: each taken,
    /// each needed one given, and links set in the same write only where
    /// the strategy's key covers them.
    fn check_effect(
        &self,
        strategy: Strategy,
        spec: &ObjectSpec,
        fields: &[Field],
        links: &[LinkTo],
    ) -> Result<(), String> {
        let (vendor, object) = (self.name, spec.object);
        for field in fields {
            if spec.fields.iter().any(|(f, _)| f == field) {
                continue;
            }
            return Err(match spec.absent.iter().find(|(f, _)| f == field) {
                Some((_, why)) => format!("{vendor}'s {object} takes no {field}: {why}"),
                None => format!("{vendor}'s {object} takes no {field}"),
            });
        }
        if let Some(need) = spec.needs.iter().find(|f| !fields.contains(f)) {
            return Err(format!(
                "{vendor}'s {object} needs its {need} in fields (the vendor requires it)"
            ));
        }
        if let Some(to) = links.iter().find(|to| !spec.links.contains(to)) {
            return Err(format!("{vendor}'s {object} cannot be linked to a {to}"));
        }
        if !links.is_empty() && !self.keying(strategy).links {
            return Err(format!(
                "{vendor} cannot set a link in the same write under strategy \"{strategy}\": \
                 a second, unkeyed write could link twice (docs/destinations.md)"
            ));
        }
        if let Some(to) = spec.needs_link.filter(|to| !links.contains(to)) {
            return Err(format!(
                "{vendor}'s {object} needs a link to its {to} (the vendor requires one)"
            ));
        }
        Ok(())
    }
}
